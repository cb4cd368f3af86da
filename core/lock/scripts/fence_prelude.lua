-- Prepended to acquire.lua and release.lua (Lua scripts cannot include one another): both raise
-- the fencing counter when they give the lock to someone.
-- The fencing counter goes up by one; where there is none (a new NAME, or one unused for its whole
-- expiry), it starts at the server's clock in microseconds, rounded down to the second. That start
-- is above every value the counter ever had: a counter grows by one per acquisition, far slower
-- than the clock, and it expired only after its expiry passed on this clock, which is longer than
-- any two servers' clocks disagree. Where the ACL refuses TIME, it counts from 1 and never expires.
local function bump(key, fence_ttl)
  local value = redis.call('INCR', key)
  local clock = redis.pcall('TIME')
  if clock.err then
    redis.call('SET', key, string.format('%.0f', value))
  elseif value == 1 then
    value = math.max(1, tonumber(clock[1]) * 1000000)
    redis.call('SET', key, string.format('%.0f', value), 'PX', fence_ttl)
  else
    redis.call('PEXPIRE', key, fence_ttl)
  end
  return value
end
