-- A max-register: raises the fencing counter KEYS[1] to ARGV[1] when that is higher, with the
-- counter's expiry ARGV[2] ms (none where the ACL refuses TIME: such a counter never expires, see
-- acquire.lua). Returns the counter's value afterwards (ARGV[1] when it was accepted).
if redis.replicate_commands then
  redis.replicate_commands()
end
local current = tonumber(redis.call('GET', KEYS[1])) or 0
local proposed = tonumber(ARGV[1])
if proposed > current then
  if redis.pcall('TIME').err then
    redis.call('SET', KEYS[1], ARGV[1])
  else
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  end
  return proposed
end
return current
