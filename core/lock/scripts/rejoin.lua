-- Puts the reader ARGV[1] of the shared mode back with expiry ARGV[2] ms where stay.lua found its
-- entry missing (a server restarted empty): its entry in the readers KEYS[2] (pruned here, with the
-- owner records KEYS[3]; its record ARGV[3], '' for none), and the marker in the lock KEYS[1], set
-- where the key is absent and stretched where it holds the marker, never anywhere else (a writer's
-- token, another client's lock). The fencing counter KEYS[4] keeps the write fence the reader read,
-- ARGV[4] ('0': none), as a set-if-greater with expiry ARGV[5] ms, as heal.lua keeps a holder's.
-- Sent only once a quorum confirmed the reader in the same renewal; no writer priority applies: the
-- reader already holds. Returns 1 when it put the reader back, 0 otherwise.
prune(KEYS[2], KEYS[3])
local kind = redis.call('TYPE', KEYS[1])['ok']
if (kind ~= 'none' and not holds_marker(KEYS[1])) or redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return 0
end
enter(KEYS[1], kind, KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[2]), ARGV[3])
local fence = tonumber(ARGV[4]) or 0
if fence > (tonumber(redis.call('GET', KEYS[4])) or 0) then
  redis.call('SET', KEYS[4], ARGV[4], 'PX', ARGV[5])
end
return 1
