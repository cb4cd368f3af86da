-- A Redis resource that only accepts writes from the newest lock holder.
--   EVAL "$(cat fenced-write.lua)" 2 RESOURCE RESOURCE:fence FENCE VALUE
-- KEYS[1] the resource, KEYS[2] the highest fence it has accepted; ARGV[1] the writer's fence
-- (REDLOCK_FENCE, or "fence" in redlock's JSON), ARGV[2] the value.
-- A write with a lower fence than one already accepted comes from a holder whose lock has run out
-- (paused, slow network): it is refused with an error reply "STALE …". The same fence may write
-- again (one holder, several writes).
local fence = tonumber(ARGV[1])
if not fence then
  return redis.error_reply('BADFENCE not a number: ' .. tostring(ARGV[1]))
end
-- Fences are integers below 2^53, which a Lua number holds exactly; the message quotes the stored
-- text, since Lua would print a number that large as 1.7e+15.
local seen = redis.call('GET', KEYS[2]) or '0'
if fence < (tonumber(seen) or 0) then
  return redis.error_reply('STALE fence ' .. ARGV[1] .. ' is older than ' .. seen)
end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
return redis.status_reply('OK')
