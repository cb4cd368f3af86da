-- Reads a semaphore without changing anything. KEYS[1] is its limit; then, for each slot, its lock
-- and its owner record (KEYS[2], KEYS[3] for slot 0, and so on). Returns a flat array: the limit
-- (false when there is none or it is not a string), then for each slot its type, its value (false
-- unless a string), its PTTL and its owner record (false when there is none).
local out = {false}
if redis.call('TYPE', KEYS[1])['ok'] == 'string' then
  out[1] = redis.call('GET', KEYS[1])
end
for i = 2, #KEYS - 1, 2 do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  local value = false
  if kind == 'string' then
    value = redis.call('GET', KEYS[i])
  end
  local owner = false
  if redis.call('TYPE', KEYS[i + 1])['ok'] == 'string' then
    owner = redis.call('GET', KEYS[i + 1])
  end
  table.insert(out, kind)
  table.insert(out, value)
  table.insert(out, redis.call('PTTL', KEYS[i]))
  table.insert(out, owner)
end
return out
