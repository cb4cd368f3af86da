-- A writer of the shared mode that readers refused (acquire.lua found their marker) enters itself
-- among the waiting writers KEYS[1] (pruned here) as ARGV[1], for ARGV[2] ms from now, so that new
-- readers hold back until it has had its turn; withdraw.lua takes it out. Returns 1.
prune(KEYS[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
stretch(KEYS[1], tonumber(ARGV[2]))
return 1
