-- Renews the reader ARGV[1] of the shared mode where it still holds: its entry in the readers
-- KEYS[2] (pruned here, with the owner records KEYS[3]) is live and the lock KEYS[1] holds the
-- marker. The entry gets ARGV[2] ms from now, or, when ARGV[3] is '1' (no TTL asked for), what it
-- has left if that is longer; the marker's expiry and the sets' are stretched to cover it, never
-- shortened. Returns the expiry set (ms); -1 where the entry is missing and the lock is absent or
-- the marker (a server restarted empty: the reader can be put back there, see rejoin.lua); 0 where
-- the reader holds nothing else (a writer holds the lock, or the marker was deleted by force).
-- Announced as 'extended' on ARGV[4] ('' for none).
prune(KEYS[2], KEYS[3])
local expiry = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not expiry then
  if redis.call('TYPE', KEYS[1])['ok'] == 'none' or holds_marker(KEYS[1]) then
    return -1
  end
  return 0
end
if not holds_marker(KEYS[1]) then
  -- The marker was deleted by force: the reader no longer keeps writers out here.
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
  return 0
end
local ttl = tonumber(ARGV[2])
if ARGV[3] == '1' then
  ttl = math.max(ttl, tonumber(expiry) - now)
end
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
for _, key in ipairs({KEYS[1], KEYS[2], KEYS[3]}) do
  stretch(key, ttl)
end
if ARGV[4] ~= '' then
  redis.call('PUBLISH', ARGV[4], 'extended')
end
return ttl
