-- A reader of the shared mode joins for token ARGV[1] with expiry ARGV[2] ms. KEYS[1] is the lock:
-- absent, or the marker 'redlock:shared' while readers hold it (anything else is a writer, ours or
-- another client's, and the reader is refused). KEYS[3] and KEYS[4] are the readers and the waiting
-- writers, sorted sets of tokens scored by their expiry in ms on this server's clock, pruned here;
-- KEYS[5] holds the readers' owner records (ARGV[3], '' for none) by token, KEYS[6] the writer's.
-- With ARGV[5] '1' (writer priority) a new reader is refused while a live writer waits. The marker's
-- expiry always covers the longest reader. KEYS[2] is the fencing counter, read, never raised.
-- Answers as acquire.lua does: {state (1 joined, 2 already a reader, 0 refused), fence counter,
-- PTTL to wait for, type, announces, owner record}; ARGV[4] is the wake-up channel ('' for none).
local ttl = tonumber(ARGV[2])

prune(KEYS[3], KEYS[5])
prune(KEYS[4])

local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and not holds_marker(KEYS[1]) then
  local record = false
  if redis.call('TYPE', KEYS[6])['ok'] == 'string' then
    record = redis.call('GET', KEYS[6])
  end
  local announces = 0
  if record then
    announces = 1
  end
  return {0, 0, redis.call('PTTL', KEYS[1]), kind, announces, record}
end
local ours = redis.call('ZSCORE', KEYS[3], ARGV[1])
if not ours and ARGV[5] == '1' and redis.call('ZCARD', KEYS[4]) > 0 then
  local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  local wait = math.max(redis.call('PTTL', KEYS[1]), tonumber(last[2]) - now, 1)
  return {0, 0, wait, 'string', 1, 'a waiting writer'}
end
enter(KEYS[1], kind, KEYS[3], KEYS[5], ARGV[1], ttl, ARGV[3])
-- 'joined', not 'acquired': a reader among others is no holder to go back to sleep for (a writer
-- that waits for the readers it found must not be sent back to sleep by one its turn holds back).
if ARGV[4] ~= '' then
  redis.call('PUBLISH', ARGV[4], 'joined')
end
local state = 1
if ours then
  state = 2
end
return {state, tonumber(redis.call('GET', KEYS[2])) or 0, 0, 'string', 1}
