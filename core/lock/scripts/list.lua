-- Reads many locks without changing anything, as status.lua reads one: KEYS holds, for each lock,
-- the lock, its owner record and its fencing counter, in threes. Returns one {type, value (false
-- unless a string), PTTL, owner record, fence counter} per lock, in the order of KEYS.
local function string_at(key)
  return redis.call('TYPE', key)['ok'] == 'string' and redis.call('GET', key)
end
local out = {}
for i = 1, #KEYS, 3 do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  local value = kind == 'string' and redis.call('GET', KEYS[i])
  local fence = tonumber(string_at(KEYS[i + 2])) or 0
  out[#out + 1] = {kind, value, redis.call('PTTL', KEYS[i]), string_at(KEYS[i + 1]), fence}
end
return out
