-- Sets the expiry of KEYS[1] and of its owner record KEYS[2] to ARGV[2] ms when KEYS[1] holds token
-- ARGV[1]. Returns 1 when it did, 0 when the lock is held otherwise, -1 when there is no lock at
-- all (a server restarted empty: the lock can be put back there, see heal.lua).
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
if kind == 'none' then
  return -1
end
return 0
