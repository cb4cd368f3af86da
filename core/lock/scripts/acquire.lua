-- Takes KEYS[1] for token ARGV[1] with expiry TTL ms when it is free (SET NX PX), or resets the
-- expiry when it already holds ARGV[1]. Either way it raises the fencing counter KEYS[2] in the
-- same step (see bump), so a quorum of equal answers is a fence already stored on a quorum.
-- ARGV[2] is "TTL FENCE_TTL": the lock's expiry and the fencing counter's (ms), which every bump
-- sets anew; one argument, since a server that asks for a password answers a request of more than
-- ten words from a client that has not given one with a protocol error instead of NOAUTH.
-- KEYS[3] is the owner record (ARGV[3], '' for none), ARGV[4] the wake-up channel ('' for none).
-- Returns {state, fencing counter, holder's PTTL, type, announces[, holder's owner record]}: state 1
-- taken, 2 already ours, 0 busy (then the counter is 0: a busy answer carries no fence; announces is
-- 1 when the holder keeps an owner record, as redlock holders do: they announce their release; and
-- the record itself follows, false when there is none, so a busy answer can say who holds the lock).
-- KEYS[4] and KEYS[5], when given, are the shared mode's readers and waiting writers: sorted sets
-- of tokens scored by their expiry in ms on this server's clock. While readers hold, KEYS[1] holds
-- the marker 'redlock:shared'; a writer (this script) is refused while a live reader is there and
-- enters itself among the waiting writers, so that new readers hold back; it leaves them when it
-- takes the lock. A marker whose readers have all expired is taken over. A writer refused there
-- answers as busy with a seventh element, 1: it is queued, and withdraws when its acquire ends.

-- TIME is not deterministic: Redis before 5 refuses writes after it unless effects are replicated.
if redis.replicate_commands then
  redis.replicate_commands()
end
local ttl, fence_ttl = string.match(ARGV[2], '^(%d+) (%d+)$')

-- The fencing counter goes up by one; where there is none (a new NAME, or one unused for its whole
-- expiry), it starts at the server's clock in microseconds, rounded down to the second. That start
-- is above every value the counter ever had: a counter grows by one per acquisition, far slower
-- than the clock, and it expired only after its expiry passed on this clock, which is longer than
-- any two servers' clocks disagree. Where the ACL refuses TIME, it counts from 1 and never expires.
local function bump()
  local value = redis.call('INCR', KEYS[2])
  local clock = redis.pcall('TIME')
  if clock.err then
    redis.call('SET', KEYS[2], string.format('%.0f', value))
  elseif value == 1 then
    value = math.max(1, tonumber(clock[1]) * 1000000)
    redis.call('SET', KEYS[2], string.format('%.0f', value), 'PX', fence_ttl)
  else
    redis.call('PEXPIRE', KEYS[2], fence_ttl)
  end
  return value
end

local shared = #KEYS >= 5
local marker = 'redlock:shared'

local function now_ms()
  local clock = redis.call('TIME')
  return tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end

-- The marker of readers who have all gone is no lock: it is deleted. Otherwise the writer waits
-- among the writers (its entry lives its TTL) and is told how many readers hold.
local function behind_readers()
  local now = now_ms()
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  local readers = redis.call('ZCARD', KEYS[4])
  if readers == 0 then
    redis.call('DEL', KEYS[1])
    return false
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
  redis.call('ZADD', KEYS[5], now + tonumber(ttl), ARGV[1])
  if redis.call('PTTL', KEYS[5]) < tonumber(ttl) then
    redis.call('PEXPIRE', KEYS[5], ttl)
  end
  return {0, 0, redis.call('PTTL', KEYS[1]), 'string', 1, 'readers (' .. readers .. ')', 1}
end

if shared and redis.call('TYPE', KEYS[1])['ok'] == 'string' and redis.call('GET', KEYS[1]) == marker then
  local busy = behind_readers()
  if busy then
    return busy
  end
end

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then
  -- Only where writers wait: a lock user's ACL needs no sorted-set commands for the mutex.
  if shared and redis.call('TYPE', KEYS[5])['ok'] == 'zset' then
    redis.call('ZREM', KEYS[5], ARGV[1])
  end
  if ARGV[3] ~= '' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ttl)
  end
  if ARGV[4] ~= '' then
    redis.call('PUBLISH', ARGV[4], 'acquired')
  end
  return {1, bump(), 0, 'string', 1}
end
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ttl)
  if redis.call('PEXPIRE', KEYS[3], ttl) == 0 and ARGV[3] ~= '' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ttl)
  end
  return {2, bump(), 0, kind, 1}
end
local record_kind = redis.call('TYPE', KEYS[3])['ok']
local announces = 0
local record = false
if record_kind ~= 'none' then
  announces = 1
end
if record_kind == 'string' then
  record = redis.call('GET', KEYS[3])
end
return {0, 0, redis.call('PTTL', KEYS[1]), kind, announces, record}
