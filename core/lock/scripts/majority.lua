-- THE BROKEN DESIGN, for a negative control only (redlock-faulty, REDLOCK_FAULT=semaphore-majority;
-- the real binary never sends it): each server admits a holder while it has fewer than K holders of
-- its own, and a simple majority of servers admitting counts as held. Here: the first slot free ON
-- THIS SERVER is taken (SET NX PX on slot 0, 1, … K-1 in turn). KEYS are, for each slot, its lock,
-- owner record and fencing counter; ARGV[1] the token, ARGV[2] "TTL FENCE_TTL" (ms), ARGV[3] the
-- owner record ('' for none). Returns {slot, fencing counter}, or {-1, 0} when every slot is taken.
local ttl, fence_ttl = string.match(ARGV[2], '^(%d+) (%d+)$')
for s = 0, #KEYS / 3 - 1 do
  if redis.call('SET', KEYS[3 * s + 1], ARGV[1], 'NX', 'PX', ttl) then
    if ARGV[3] ~= '' then
      redis.call('SET', KEYS[3 * s + 2], ARGV[3], 'PX', ttl)
    end
    local fence = redis.call('INCR', KEYS[3 * s + 3])
    redis.call('PEXPIRE', KEYS[3 * s + 3], fence_ttl)
    return {s, fence}
  end
end
return {-1, 0}
