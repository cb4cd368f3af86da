-- A max-register: raises the fencing counter KEYS[1] to ARGV[1] when that is higher.
-- Returns the counter's value afterwards (ARGV[1] when it was accepted).
local current = tonumber(redis.call('GET', KEYS[1])) or 0
local proposed = tonumber(ARGV[1])
if proposed > current then
  redis.call('SET', KEYS[1], ARGV[1])
  return proposed
end
return current
