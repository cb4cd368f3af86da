-- Sets the expiry of KEYS[1] and of its owner record KEYS[2] when KEYS[1] holds token ARGV[1]: to
-- ARGV[2] ms, or, when ARGV[3] is '1' (no TTL was asked for), to the TTL the lock was taken with,
-- as its owner record says ("UNIX_MS/TTL_MS OWNER"; else ARGV[2]), or to the lock's remaining TTL
-- when that is longer: an extend without a TTL never shortens a lock. Returns the expiry set (ms,
-- > 0) when it did, 0 when the lock is held otherwise, -1 when there is no lock at all (a server
-- restarted empty: the lock can be put back there, see heal.lua). An extension is announced as
-- 'extended' on the wake-up channel ARGV[4] (absent or '' for none), for `watch`: waiters ignore it.
local kind = redis.call('TYPE', KEYS[1])['ok']
-- Ours only with an expiry: a string without one is application data, whatever it holds.
if kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('PTTL', KEYS[1]) >= 0 then
  local ttl = tonumber(ARGV[2])
  if ARGV[3] == '1' then
    if redis.call('TYPE', KEYS[2])['ok'] == 'string' then
      ttl = tonumber(string.match(redis.call('GET', KEYS[2]), '^%d+/(%d+) ')) or ttl
    end
    ttl = math.max(ttl, redis.call('PTTL', KEYS[1]))
  end
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  if ARGV[4] and ARGV[4] ~= '' then
    redis.call('PUBLISH', ARGV[4], 'extended')
  end
  return ttl
end
if kind == 'none' then
  return -1
end
return 0
