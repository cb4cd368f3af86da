-- Takes KEYS[1] for token ARGV[1] with expiry ARGV[2] ms when it is free (SET NX PX), or resets the
-- expiry when it already holds ARGV[1]. Either way it raises the fencing counter KEYS[2] by one in
-- the same step, so a quorum of equal answers is a fence already stored on a quorum.
-- KEYS[3] is the owner record (ARGV[3], '' for none), ARGV[4] the wake-up channel ('' for none).
-- Returns {state, fencing counter, holder's PTTL, type, announces[, holder's owner record]}: state 1
-- taken, 2 already ours, 0 busy (then the counter is 0: a busy answer carries no fence; announces is
-- 1 when the holder keeps an owner record, as redlock holders do: they announce their release; and
-- the record itself follows, false when there is none, so a busy answer can say who holds the lock).
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] ~= '' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
  end
  if ARGV[4] ~= '' then
    redis.call('PUBLISH', ARGV[4], 'acquired')
  end
  return {1, redis.call('INCR', KEYS[2]), 0, 'string', 1}
end
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if redis.call('PEXPIRE', KEYS[3], ARGV[2]) == 0 and ARGV[3] ~= '' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
  end
  return {2, redis.call('INCR', KEYS[2]), 0, kind, 1}
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
