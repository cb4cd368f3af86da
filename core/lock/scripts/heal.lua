-- Puts the lock KEYS[1] back for token ARGV[1] with expiry ARGV[2] ms where it is missing (a server
-- restarted empty), never over anything else (SET NX PX), with its owner record KEYS[2] (ARGV[3],
-- '' for none). The fencing counter KEYS[3] keeps the holder's fence ARGV[4] ('0': unknown) as a
-- set-if-greater, never raised past it: a heal is no new acquisition; it gets the counter's expiry
-- ARGV[5] ms (none where the ACL refuses TIME, see acquire.lua). Sent only once a quorum confirmed
-- the lock in the same renewal. Returns 1 when it put the lock back, 0 otherwise.
if redis.replicate_commands then
  redis.replicate_commands()
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
end
local fence = tonumber(ARGV[4]) or 0
if fence > (tonumber(redis.call('GET', KEYS[3])) or 0) then
  if redis.pcall('TIME').err then
    redis.call('SET', KEYS[3], ARGV[4])
  else
    redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])
  end
end
return 1
