-- Reads many locks without changing anything, as status.lua reads one: KEYS holds, for each lock,
-- the lock, its owner record and its fencing counter, in threes. Returns one {type, value (false
-- unless a string), PTTL, owner record, fence counter} per lock, in the order of KEYS.
local out = {}
for i = 1, #KEYS, 3 do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  local value = false
  if kind == 'string' then
    value = redis.call('GET', KEYS[i])
  end
  local owner = false
  if redis.call('TYPE', KEYS[i + 1])['ok'] == 'string' then
    owner = redis.call('GET', KEYS[i + 1])
  end
  local fence = 0
  if redis.call('TYPE', KEYS[i + 2])['ok'] == 'string' then
    fence = tonumber(redis.call('GET', KEYS[i + 2])) or 0
  end
  out[#out + 1] = {kind, value, redis.call('PTTL', KEYS[i]), owner, fence}
end
return out
