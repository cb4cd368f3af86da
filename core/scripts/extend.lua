-- Sets the expiry of KEYS[1] and of its owner record KEYS[2] to ARGV[2] ms when KEYS[1] holds token
-- ARGV[1]. Returns 1 when it did, 0 when the lock is not held with this token.
if redis.call('TYPE', KEYS[1])['ok'] == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 0
