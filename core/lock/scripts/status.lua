-- Reads the lock KEYS[1] without changing anything. KEYS[2] is the owner record, KEYS[3] the
-- fencing counter. Returns {type, value (false unless a string), PTTL, owner record, fence counter}.
local kind = redis.call('TYPE', KEYS[1])['ok']
local value = false
if kind == 'string' then
  value = redis.call('GET', KEYS[1])
end
local owner = false
if redis.call('TYPE', KEYS[2])['ok'] == 'string' then
  owner = redis.call('GET', KEYS[2])
end
return {kind, value, redis.call('PTTL', KEYS[1]), owner, tonumber(redis.call('GET', KEYS[3])) or 0}
