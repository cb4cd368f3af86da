-- Takes KEYS[1] for token ARGV[1] with expiry ARGV[2] ms when it is free (SET NX PX), or resets the
-- expiry when it already holds ARGV[1]. KEYS[2] is the fencing counter (read only here), KEYS[3] the
-- owner record (ARGV[3], '' for none), ARGV[4] the wake-up channel ('' for none).
-- Returns {state, fencing counter, holder's PTTL, type}: state 1 taken, 2 already ours, 0 busy.
local counter = tonumber(redis.call('GET', KEYS[2])) or 0
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] ~= '' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
  end
  if ARGV[4] ~= '' then
    redis.call('PUBLISH', ARGV[4], 'acquired')
  end
  return {1, counter, 0, 'string'}
end
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if redis.call('PEXPIRE', KEYS[3], ARGV[2]) == 0 and ARGV[3] ~= '' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
  end
  return {2, counter, 0, kind}
end
return {0, counter, redis.call('PTTL', KEYS[1]), kind}
