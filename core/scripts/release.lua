-- Deletes KEYS[1] when it holds token ARGV[1], or whatever it holds when ARGV[3] is '1' (--force),
-- together with its owner record KEYS[2], and wakes the waiters on channel ARGV[2] ('' for none),
-- telling them how many they are: ARGV[4] is 'released' (a holder let go) or 'retracted' (an
-- attempt without a quorum gave back what it took). Returns the number of lock keys deleted (0 or 1).
local deleted = 0
if ARGV[3] == '1' then
  deleted = redis.call('DEL', KEYS[1])
elseif redis.call('TYPE', KEYS[1])['ok'] == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  deleted = redis.call('DEL', KEYS[1])
end
if deleted == 1 then
  redis.call('DEL', KEYS[2])
  if ARGV[2] ~= '' then
    local waiting = redis.call('PUBSUB', 'NUMSUB', ARGV[2])[2]
    redis.call('PUBLISH', ARGV[2], ARGV[4] .. ' ' .. waiting)
  end
end
return deleted
