-- What every script of the shared mode begins with (the build puts it in front of join, stay,
-- leave, queue, withdraw and readers): the server's clock in ms, the marker the lock holds while readers
-- hold it, the pruning of a sorted set of tokens scored by their expiry, and the wake-up message.
if redis.replicate_commands then
  redis.replicate_commands()
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local marker = 'redlock:shared'

-- Drops the entries of SET whose expiry has passed, and their owner records in RECORDS (if any).
local function prune(set, records)
  if records then
    for _, gone in ipairs(redis.call('ZRANGEBYSCORE', set, '-inf', now)) do
      redis.call('HDEL', records, gone)
    end
  end
  redis.call('ZREMRANGEBYSCORE', set, '-inf', now)
end

-- Sets KEY's expiry to MS unless it already lasts longer.
local function stretch(key, ms)
  if redis.call('PTTL', key) < ms then
    redis.call('PEXPIRE', key, ms)
  end
end

local function holds_marker(key)
  return redis.call('TYPE', key)['ok'] == 'string' and redis.call('GET', key) == marker
end

-- Enters reader TOKEN for TTL ms in READERS, with its owner record RECORD ('' for none) in RECORDS,
-- and makes the lock LOCK (of type KIND: 'none' or the marker) hold the marker for at least as long.
local function enter(lock, kind, readers, records, token, ttl, record)
  redis.call('ZADD', readers, now + ttl, token)
  stretch(readers, ttl)
  if record ~= '' then
    redis.call('HSET', records, token, record)
    stretch(records, ttl)
  end
  if kind == 'none' then
    redis.call('SET', lock, marker, 'PX', ttl)
  else
    stretch(lock, ttl)
  end
end

-- Tells the waiters on CHANNEL ('' for none) WORD and how many they are, as release.lua does.
local function wake(channel, word)
  if channel ~= '' then
    local waiting = redis.call('PUBSUB', 'NUMSUB', channel)[2]
    redis.call('PUBLISH', channel, word .. ' ' .. waiting)
  end
end

