-- Lets the reader ARGV[1] of the shared mode go: its entry leaves the readers KEYS[2] (pruned
-- here, with the owner records KEYS[3]); with ARGV[3] '1' (--force) every reader goes. The marker
-- in the lock KEYS[1] is then shortened to the longest reader left, or deleted when none is, and
-- the waiters on channel ARGV[2] ('' for none) are told as release.lua tells them (ARGV[4]:
-- 'released' or 'retracted'). Returns the number of readers that left, all of them when forced
-- (0 where there were none: nothing was deleted there).
prune(KEYS[2], KEYS[3])
local left = 0
if ARGV[3] == '1' then
  left = redis.call('ZCARD', KEYS[2])
  redis.call('DEL', KEYS[2], KEYS[3])
else
  left = redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
end
if holds_marker(KEYS[1]) then
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(last[2]) - now))
  else
    redis.call('DEL', KEYS[1])
    wake(ARGV[2], ARGV[4])
  end
end
return left
