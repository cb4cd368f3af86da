-- Reads the shared mode's readers without changing anything: KEYS[1] the readers, KEYS[2] the
-- waiting writers (sorted sets scored by expiry in ms on this server's clock), KEYS[3] the readers'
-- owner records. Returns {number of live waiting writers, {token, ms left, owner record or false}
-- for each live reader, in the order they expire}.
local readers = {}
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #live, 2 do
  local owner = redis.call('HGET', KEYS[3], live[i]) or false
  readers[#readers + 1] = {live[i], tonumber(live[i + 1]) - now, owner}
end
return {redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf'), readers}
