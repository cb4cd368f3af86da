-- Reads the lock KEYS[1] without changing anything. KEYS[2] is the owner record, KEYS[3] the
-- fencing counter. Returns {type, value (false unless a string), PTTL, owner record, fence counter}.
-- With KEYS[4], the waiters' queue ({KEY}:redlock:waiters), a sixth element: its live waiters
-- (whose heartbeat {KEY}:redlock:waiter:ID lives), at most the first 100, in the queue's order, as
-- {ID, TICKET, OWNER, ...} (OWNER is the heartbeat's value: the waiter's --owner).
local kind = redis.call('TYPE', KEYS[1])['ok']
local value = false
if kind == 'string' then
  value = redis.call('GET', KEYS[1])
end
local owner = false
if redis.call('TYPE', KEYS[2])['ok'] == 'string' then
  owner = redis.call('GET', KEYS[2])
end
local reading = {kind, value, redis.call('PTTL', KEYS[1]), owner, tonumber(redis.call('GET', KEYS[3])) or 0}
-- Through pcall: an ACL without the queue's commands leaves the queue unread, not the lock.
if KEYS[4] then
  local prefix = string.sub(KEYS[4], 1, -8)
  local entries = redis.pcall('ZRANGE', KEYS[4], 0, 99, 'WITHSCORES')
  if type(entries) ~= 'table' or entries.err then
    entries = {}
  end
  local live = {}
  for i = 1, #entries, 2 do
    local waiter = redis.pcall('GET', prefix .. 'waiter:' .. entries[i])
    if type(waiter) == 'string' then
      live[#live + 1] = entries[i]
      live[#live + 1] = entries[i + 1]
      live[#live + 1] = waiter
    end
  end
  reading[6] = live
end
return reading
