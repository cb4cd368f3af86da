-- Reads the waiters' queue KEYS[1] ({KEY}:redlock:waiters) without changing anything: the live
-- waiters (whose heartbeat {KEY}:redlock:waiter:ID lives), at most the first 100, in the queue's
-- order. Returns {ID, TICKET, OWNER, ...} (OWNER is the heartbeat's value: the waiter's --owner).
local prefix = string.sub(KEYS[1], 1, -8)
local entries = redis.call('ZRANGE', KEYS[1], 0, 99, 'WITHSCORES')
local live = {}
for i = 1, #entries, 2 do
  local owner = redis.call('GET', prefix .. 'waiter:' .. entries[i])
  if owner then
    live[#live + 1] = entries[i]
    live[#live + 1] = entries[i + 1]
    live[#live + 1] = owner
  end
end
return live
