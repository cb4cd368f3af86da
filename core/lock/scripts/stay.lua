-- Renews the reader ARGV[1] of the shared mode where it still holds: its entry in the readers
-- KEYS[2] (pruned here, with the owner records KEYS[3]) is live and the lock KEYS[1] holds the
-- marker. The entry gets ARGV[2] ms from now, or, when ARGV[3] is '1' (no TTL asked for), what it
-- has left if that is longer; the marker's expiry and the sets' are stretched to cover it, never
-- shortened. Returns the expiry set (ms), or 0 where the reader holds nothing: never -1, since a
-- reader is not put back where it is missing. Announced as 'extended' on ARGV[4] ('' for none).
local marker = 'redlock:shared'
if redis.replicate_commands then
  redis.replicate_commands()
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do
  redis.call('HDEL', KEYS[3], gone)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local expiry = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not expiry then
  return 0
end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' or redis.call('GET', KEYS[1]) ~= marker then
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
  if redis.call('PTTL', key) < ttl then
    redis.call('PEXPIRE', key, ttl)
  end
end
if ARGV[4] ~= '' then
  redis.call('PUBLISH', ARGV[4], 'extended')
end
return ttl
