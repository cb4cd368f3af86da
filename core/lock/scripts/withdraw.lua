-- A writer of the shared mode that stops waiting (it gave up, its wait ran out, a signal, or it
-- took the lock elsewhere) leaves the waiting writers KEYS[1] (pruned here). When it was the last,
-- the readers it held back are woken on channel ARGV[2] ('' for none) with 'retracted', so they
-- try again after a jittered delay. Returns 1 when its entry was there, else 0.
if redis.replicate_commands then
  redis.replicate_commands()
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if removed == 1 and redis.call('ZCARD', KEYS[1]) == 0 and ARGV[2] ~= '' then
  local waiting = redis.call('PUBSUB', 'NUMSUB', ARGV[2])[2]
  redis.call('PUBLISH', ARGV[2], 'retracted ' .. waiting)
end
return removed
