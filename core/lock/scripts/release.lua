-- Deletes KEYS[1] when it holds token ARGV[1], or, when ARGV[3] is '1' (--force), when it can be a
-- lock at all: a string with an expiry, whoever's token it holds. Anything else under the key (another
-- type, a string without an expiry: application data) is never deleted, forced or not; a forced
-- release answers -1 for it, and takes every reader with a readers' marker. With the lock goes its
-- owner record KEYS[2], and the waiters on channel ARGV[2] ('' for none) are woken and told how
-- many they are: ARGV[4] is 'released' (a holder let go) or 'retracted' (an attempt without a
-- quorum gave back what it took). Returns the number of lock keys deleted (0 or 1), or -1.
-- The message also goes to the first two live waiters of the lock's queue (see acquire.lua), each
-- on a channel of its own, ARGV[2] .. ':' .. ID, and names them after the count, "released N ID1
-- ID2": the first tries at once, the second a little later in case the first does not answer; the
-- other queued waiters hear nothing (a crowd woken for nothing costs the servers and the CPUs).
-- The second is told only where ARGV[5] is '1' (the client asks it of a few servers: one word that
-- it was named is enough, and a message per server would wake it once per server).
-- Waiters whose heartbeat is gone are dropped from the queue on the way. N counts the subscribers
-- of ARGV[2] alone (waiters that do not queue). The queue's commands go through pcall, as in
-- acquire.lua.
-- A release (not a retraction) hands the lock to the first named waiter, when that waiter asked for
-- it at its last join (its record {KEY}:redlock:grant:ID, see acquire.lua): the lock becomes the
-- waiter's, SET NX as any acquisition, for the short expiry GRANT of the record, with its owner
-- record and the fence raised, and the message ends with "granted:GRANT". The record goes with it, so
-- a waiter is handed the lock once per join: one that died is not handed it again. The waiter
-- counts the servers that hand it the lock as votes only once it has read them back (its token,
-- before and after it sets its own TTL with PEXPIRE GT): see Redlock::take_grant.

-- TIME is not deterministic: Redis before 5 refuses writes after it unless effects are replicated.
if redis.replicate_commands then
  redis.replicate_commands()
end

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

-- Hands the lock to waiter ID, as above. Returns the expiry it was given (ms), or nil.
local function grant(prefix, id)
  local record = redis.pcall('GET', prefix .. 'grant:' .. id)
  if type(record) ~= 'string' then
    return nil
  end
  local expiry, ttl, fence_ttl, token, owner = string.match(record, '^(%d+) (%d+) (%d+) (%S+)(.*)$')
  if not expiry or not redis.call('SET', KEYS[1], token, 'NX', 'PX', expiry) then
    return nil
  end
  redis.call('DEL', prefix .. 'grant:' .. id)
  if owner ~= '' then
    local clock = redis.pcall('TIME')
    local unix_ms = clock.err and 0 or tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
    redis.call('SET', KEYS[2], string.format('%.0f', unix_ms) .. '/' .. ttl .. ' ' .. string.sub(owner, 2), 'PX',
               expiry)
  end
  bump(prefix .. 'fence', fence_ttl)
  return expiry
end

local deleted = 0
local kind = redis.call('TYPE', KEYS[1])['ok']
if ARGV[3] == '1' then
  if kind == 'string' and redis.call('PTTL', KEYS[1]) >= 0 then
    -- Readers of the shared mode hold with a marker: forced, they all go with it (readers.lua's
    -- keys, beside the channel), so that no reader is left counted under a writer.
    if ARGV[2] ~= '' and redis.call('GET', KEYS[1]) == 'redlock:shared' then
      local prefix = string.sub(ARGV[2], 1, -5)
      redis.call('DEL', prefix .. 'readers', prefix .. 'readerowners')
    end
    deleted = redis.call('DEL', KEYS[1])
  elseif kind ~= 'none' then
    return -1
  end
elseif kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('PTTL', KEYS[1]) >= 0 then
  -- Ours only with an expiry: a string without one is application data, whatever it holds.
  deleted = redis.call('DEL', KEYS[1])
end
-- Names the first live waiters (and hands the lock to the first, after a release) once the lock is
-- gone here. FREE: it was not here to begin with (this server missed the holder's acquisition, or
-- lost it): a release hands it over all the same, so that the next holder holds every server the
-- release reached and newcomers find none free to split the vote on; a retraction says nothing.
local function wake(free)
  local named = live_waiters(ARGV[2], 2)
  local granted = ARGV[4] == 'released' and named[1] and grant(string.sub(ARGV[2], 1, -5), named[1])
  if free and not granted then
    return
  end
  local message = ARGV[4] .. ' ' .. redis.call('PUBSUB', 'NUMSUB', ARGV[2])[2]
  for _, id in ipairs(named) do
    message = message .. ' ' .. id
  end
  if granted then
    message = message .. ' granted:' .. granted
  end
  redis.call('PUBLISH', ARGV[2], message)
  for k, id in ipairs(named) do
    if k == 1 or ARGV[5] == '1' then
      redis.pcall('PUBLISH', ARGV[2] .. ':' .. id, message)
    end
  end
  if granted then
    redis.call('PUBLISH', ARGV[2], 'acquired')
  end
end

if deleted == 1 then
  redis.call('DEL', KEYS[2])
end
if ARGV[2] ~= '' and (deleted == 1 or kind == 'none') then
  wake(deleted == 0)
end
return deleted
