-- Deletes KEYS[1] when it holds token ARGV[1], or, when ARGV[3] is '1' (--force), when it can be a
-- lock at all: a string with an expiry, whoever's token it holds. Anything else under the key (another
-- type, a string without an expiry: application data) is never deleted, forced or not; a forced
-- release answers -1 for it. With the lock goes its owner record KEYS[2], and the waiters on channel
-- ARGV[2] ('' for none) are woken and told how many they are: ARGV[4] is 'released' (a holder let
-- go) or 'retracted' (an attempt without a quorum gave back what it took). Returns the number of
-- lock keys deleted (0 or 1), or -1.
local deleted = 0
local kind = redis.call('TYPE', KEYS[1])['ok']
if ARGV[3] == '1' then
  if kind == 'string' and redis.call('PTTL', KEYS[1]) >= 0 then
    deleted = redis.call('DEL', KEYS[1])
  elseif kind ~= 'none' then
    return -1
  end
elseif kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
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
