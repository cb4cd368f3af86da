-- Deletes KEYS[1] when it holds token ARGV[1], or, when ARGV[3] is '1' (--force), when it can be a
-- lock at all: a string with an expiry, whoever's token it holds. Anything else under the key (another
-- type, a string without an expiry: application data) is never deleted, forced or not; a forced
-- release answers -1 for it. With the lock goes its owner record KEYS[2], and the waiters on channel
-- ARGV[2] ('' for none) are woken and told how many they are: ARGV[4] is 'released' (a holder let
-- go) or 'retracted' (an attempt without a quorum gave back what it took). Returns the number of
-- lock keys deleted (0 or 1), or -1.
-- The message also goes to the first two live waiters of the lock's queue (see acquire.lua), each
-- on a channel of its own, ARGV[2] .. ':' .. ID, and names them after the count, "released N ID1
-- ID2": the first tries at once, the second a little later in case the first does not answer; the
-- other queued waiters hear nothing (a crowd woken for nothing costs the servers and the CPUs).
-- Waiters whose heartbeat is gone are dropped from the queue on the way. N counts the subscribers
-- of ARGV[2] alone (waiters that do not queue). The queue's commands go through pcall, as in
-- acquire.lua.

-- The first live waiters (at most WANTED) of the queue beside CHANNEL, dead ones removed.
local function live_waiters(channel, wanted)
  local prefix = string.sub(channel, 1, -5)
  local waiters = prefix .. 'waiters'
  local ids = redis.pcall('ZRANGE', waiters, 0, 15)
  local named = {}
  if type(ids) ~= 'table' or ids.err then
    return named
  end
  for _, id in ipairs(ids) do
    if redis.pcall('EXISTS', prefix .. 'waiter:' .. id) == 1 then
      named[#named + 1] = id
      if #named == wanted then
        break
      end
    else
      redis.pcall('ZREM', waiters, id)
    end
  end
  return named
end

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
    local named = live_waiters(ARGV[2], 2)
    local message = ARGV[4] .. ' ' .. redis.call('PUBSUB', 'NUMSUB', ARGV[2])[2]
    for _, id in ipairs(named) do
      message = message .. ' ' .. id
    end
    redis.call('PUBLISH', ARGV[2], message)
    for _, id in ipairs(named) do
      redis.pcall('PUBLISH', ARGV[2] .. ':' .. id, message)
    end
  end
end
return deleted
