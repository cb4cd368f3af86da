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
-- While readers of the shared mode hold, KEYS[1] holds their marker 'redlock:shared': the answer is
-- busy, with the record 'readers' and a seventh element, 1, so that the writer enters itself among
-- the waiting writers (queue.lua) and new readers hold back. No more keys here: another would make
-- the request longer than ten words, too long for a server that wants a password (see ARGV[2]).

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

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then
  if ARGV[3] ~= '' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ttl)
  end
  if ARGV[4] ~= '' then
    redis.call('PUBLISH', ARGV[4], 'acquired')
  end
  return {1, bump(), 0, 'string', 1}
end
local kind = redis.call('TYPE', KEYS[1])['ok']
local value = kind == 'string' and redis.call('GET', KEYS[1])
if value == 'redlock:shared' then
  return {0, 0, redis.call('PTTL', KEYS[1]), kind, 1, 'readers', 1}
end
if value == ARGV[1] then
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
