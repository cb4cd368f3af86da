-- Reads a semaphore without changing anything. KEYS[1] is its limit; then, for each slot, its lock
-- and its owner record (KEYS[2], KEYS[3] for slot 0, and so on). Returns a flat array: the limit
-- (false when there is none or it is not a string), then for each slot its type, its value (false
-- unless a string), its PTTL and its owner record (false when there is none).
local function string_at(key)
  return redis.call('TYPE', key)['ok'] == 'string' and redis.call('GET', key)
end
local out = {string_at(KEYS[1])}
for i = 2, #KEYS - 1, 2 do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  local value = kind == 'string' and redis.call('GET', KEYS[i])
  table.insert(out, kind)
  table.insert(out, value)
  table.insert(out, redis.call('PTTL', KEYS[i]))
  table.insert(out, string_at(KEYS[i + 1]))
end
return out
