-- A writer of the shared mode that stops waiting (it gave up, its wait ran out, a signal, or it
-- took the lock elsewhere) leaves the waiting writers KEYS[1] (pruned here). When it was the last,
-- the readers it held back are woken on channel ARGV[2] ('' for none) with 'retracted', so they
-- try again after a jittered delay. Returns 1 when its entry was there, else 0.
prune(KEYS[1])
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if removed == 1 and redis.call('ZCARD', KEYS[1]) == 0 then
  wake(ARGV[2], 'retracted')
end
return removed
