-- Takes KEYS[1] for token ARGV[1] with expiry TTL ms when it is free (SET NX PX), or resets the
-- expiry when it already holds ARGV[1]. Either way it raises the fencing counter KEYS[2] in the
-- same step (see bump), so a quorum of equal answers is a fence already stored on a quorum.
-- ARGV[2] is "TTL FENCE_TTL[ WAITER HEARTBEAT[ FLAGS]]": the lock's expiry and the fencing counter's
-- (ms), which every bump sets anew, and for a caller that waits, its waiter id and heartbeat (ms)
-- and its flags (fair, barge, place: see below); one argument, since a server that asks for a
-- password answers a request of more than ten words from a client that has not given one with a
-- protocol error instead of NOAUTH.
-- KEYS[3] is the owner record (ARGV[3], '' for none), ARGV[4] the wake-up channel ('' for none).
-- Returns {state, fencing counter, holder's PTTL, type, announces[, holder's owner record]}: state 1
-- taken, 2 already ours, 0 busy (then the counter is 0: a busy answer carries no fence; announces is
-- 1 when the holder keeps an owner record, as redlock holders do: they announce their release; and
-- the record itself follows, false when there is none, so a busy answer can say who holds the lock
-- (when taken, the sixth element is 1 when the waiter kept its place in the queue, see queue,
-- and the seventh 1 when a barging waiter was granted it ahead of another head here);
-- then 1 when the caller joined the queue of waiters, 0 when it did not, or could not: an ACL; then 1
-- when readers of the shared mode hold, 0 otherwise; then 1 when the lock is free here but another
-- waiter is the fair queue's head (the PTTL is then the head's heartbeat's), the caller's ticket
-- (0 when it did not join, or joined outside fair mode), how many are queued ahead of it (-1 when
-- unknown or not asked for), when the queue refused, the head's id, and 1 when the queue is in
-- fair mode here (a fair waiter's mark lives)).
-- A waiter joins the lock's queue when it finds the lock busy and leaves it when its acquire ends
-- (see queue below); the queue only decides whom a release wakes, never who may take the lock.
-- While readers of the shared mode hold, KEYS[1] holds their marker 'redlock:shared': the answer is
-- busy, with the record 'readers' and the last element 1, so that the writer enters itself among
-- the waiting writers (queue.lua) and new readers hold back. Such a writer does not join the queue
-- of waiters: the readers' last release wakes every listener on the lock's channel. No more keys
-- here: another would make the request longer than ten words, too long for a server that wants a
-- password (see ARGV[2]).

-- TIME is not deterministic: Redis before 5 refuses writes after it unless effects are replicated.
if redis.replicate_commands then
  redis.replicate_commands()
end
local ttl, fence_ttl, rest = string.match(ARGV[2], '^(%d+) (%d+)(.*)$')
local waiter, heartbeat, flags = string.match(rest, '^ (%x+) (%d+) ?(%a*)$')
-- FLAGS: 'f' a fair waiter (it turns the queue's order on, see head_ahead), 'b' a waiter that
-- skips the queue's order for this hand-off (the queues' heads disagreed for a heartbeat TTL),
-- 'p' a waiter that reads its place in line (-v, --max-queue) outside fair mode too, 'g' a waiter
-- that takes the lock from a release's hands (see grant_record).
local fair = flags and string.find(flags, 'f', 1, true) ~= nil
local barge = flags and string.find(flags, 'b', 1, true) ~= nil
local wants_place = flags and string.find(flags, 'p', 1, true) ~= nil
local wants_grant = flags and string.find(flags, 'g', 1, true) ~= nil
local prefix = ARGV[4] ~= '' and string.sub(ARGV[4], 1, -5)
-- Fair mode here: a fair waiter's mark {KEY}:redlock:fair lives, read once per call.
local marked = prefix and redis.pcall('EXISTS', prefix .. 'fair') == 1

-- What a release needs to hand the lock to this waiter (see release.lua), kept beside its heartbeat
-- as {KEY}:redlock:grant:ID for as long as a join's heartbeat: "GRANT TTL FENCE_TTL TOKEN[ OWNER]",
-- where GRANT is the expiry the release gives the lock (half a heartbeat, at most the TTL: a waiter
-- that died in the queue holds it up no longer) and OWNER the --owner of its record, when it keeps one.
local function grant_record()
  local grant = math.min(tonumber(ttl), math.max(1, math.floor(tonumber(heartbeat) / 2)))
  local record = grant .. ' ' .. ttl .. ' ' .. fence_ttl .. ' ' .. ARGV[1]
  local owner = string.match(ARGV[3], '^%S+ (.*)$')
  return owner and record .. ' ' .. owner or record
end
-- A token with a space in it would not read back from the record: such a waiter is not handed the lock.
wants_grant = wants_grant and not string.find(ARGV[1], '%s')

-- The queue is {KEY}:redlock:waiters beside the channel {KEY}:redlock:wake (a sorted set of waiter
-- ids, scored in arrival order on this server), and each waiter's heartbeat is
-- {KEY}:redlock:waiter:ID, which the waiter keeps alive while it waits; it listens on a channel of
-- its own, {KEY}:redlock:wake:ID, where releases name it when its turn comes. Its commands go through
-- pcall: an ACL written before the queue existed refuses them, and the lock works as before
-- (every release then wakes every waiter).
-- In fair mode here (the mark lives, or the caller is fair and sets it), joining takes a ticket:
-- the score, {KEY}:redlock:ticket raised by one and never below the last score queued here; a
-- waiter already queued keeps its own. Outside it the score is the last one plus one, as arrival
-- order here, and no ticket is drawn: the order only says whom a release names. Returns {joined,
-- ticket (0 outside fair mode), place}: place is how many are queued ahead (dead ones not yet
-- dropped included), -1 when not asked for outside fair mode.
local function queue(join)
  if not waiter or not prefix then
    return join and {0, 0, -1} or 0
  end
  local waiters, alive = prefix .. 'waiters', prefix .. 'waiter:' .. waiter
  if not join then
    -- Taken: the waiters next in line, who may have been named by the release, go back to sleep.
    -- The waiter keeps its place until it knows it won on a quorum (it then leaves everywhere, see
    -- QueuePlace): a split vote must not send it to the back where it was taken and leave the
    -- servers with different heads, nor out of this queue for as long as another holds the lock on
    -- a quorum (a release that reached this server last names the next waiters here, and each of
    -- their attempts takes this server alone). Returns 1 when it kept a place it had here. A kept
    -- place has its heartbeat refreshed here, as a busy answer's join refreshes it: the waiter
    -- counts every attempt as a heartbeat, and one granted here at every try of a long split would
    -- otherwise lapse and lose its place.
    -- Its heartbeat lives where its place does (joined and left together): PEXPIRE finds it.
    -- The grant record stays with the place: should this attempt fall short of a quorum and give
    -- the lock back here, the next release here hands it over. The waiter deletes both when its
    -- acquire ends, before its own release can reach this server.
    local kept = redis.pcall('PEXPIRE', alive, heartbeat) == 1
    if kept and wants_grant then
      redis.pcall('SET', prefix .. 'grant:' .. waiter, grant_record(), 'PX', heartbeat)
    end
    local next = redis.pcall('ZRANGE', waiters, 0, 2)
    if type(next) == 'table' and not next.err then
      local told = 0
      for _, id in ipairs(next) do
        if id ~= waiter and told < 2 then
          redis.pcall('PUBLISH', ARGV[4] .. ':' .. id, 'acquired')
          told = told + 1
        end
      end
    end
    return kept and 1 or 0
  end
  local last = redis.pcall('ZRANGE', waiters, -1, -1, 'WITHSCORES')
  local fair_mode = fair or marked
  local score = fair_mode and tonumber(redis.pcall('ZSCORE', waiters, waiter))
  if not fair_mode then
    -- ZADD NX below keeps the score of a waiter already queued here.
    score = type(last) == 'table' and last[2] and tonumber(last[2]) + 1 or 1
  elseif not score then
    local ticket = redis.pcall('INCR', prefix .. 'ticket')
    score = type(ticket) == 'number' and ticket or 1
    if type(last) == 'table' and last[2] and tonumber(last[2]) >= score then
      score = tonumber(last[2]) + 1
      redis.pcall('SET', prefix .. 'ticket', score)
    end
    redis.pcall('PEXPIRE', prefix .. 'ticket', fence_ttl)
  end
  if fair then
    marked = not redis.pcall('SET', prefix .. 'fair', '1', 'PX', heartbeat).err or marked
  end
  -- The heartbeat holds the waiter's --owner, which status shows.
  local owner = string.match(ARGV[3], '^%S+ (.*)$') or '1'
  -- Joined only when everything the queue needs is allowed, the release's commands and the
  -- waiter's own channel included: a waiter that listens there alone must be named when its turn
  -- comes, or it would not hear the release at all.
  local answers = {last, redis.pcall('ZADD', waiters, 'NX', score, waiter), redis.pcall('PEXPIRE', waiters, heartbeat),
                   redis.pcall('SET', alive, owner, 'PX', heartbeat), redis.pcall('EXISTS', alive),
                   redis.pcall('ZREM', waiters, ''), redis.pcall('PUBLISH', ARGV[4] .. ':' .. waiter, 'queued')}
  for _, answer in ipairs(answers) do
    if type(answer) == 'table' and answer.err then
      return {0, 0, -1}
    end
  end
  if wants_grant then
    redis.pcall('SET', prefix .. 'grant:' .. waiter, grant_record(), 'PX', heartbeat)
  end
  local place = (fair_mode or wants_place) and redis.pcall('ZRANK', waiters, waiter)
  return {1, fair_mode and score or 0, type(place) == 'number' and place or -1}
end

-- While a fair waiter's mark {KEY}:redlock:fair lives, the lock goes only to the queue's live head:
-- the first waiter whose heartbeat lives (dead ones are dropped on the way). Returns the head's
-- heartbeat PTTL when the head is another waiter, nil when the caller may take the lock. The
-- queue only ever refuses: every grant is still SET NX below. A barging waiter is not refused,
-- but told whether it went ahead of another head (the hand-off degraded) or took its own turn.
local function head_ahead()
  if not marked then
    return nil
  end
  local waiters = prefix .. 'waiters'
  local ids = redis.pcall('ZRANGE', waiters, 0, 15)
  if type(ids) ~= 'table' or ids.err then
    return nil
  end
  for _, id in ipairs(ids) do
    local left = redis.pcall('PTTL', prefix .. 'waiter:' .. id)
    if type(left) == 'number' and left ~= -2 then
      if id == waiter then
        return nil
      end
      return math.max(left, 0), id
    end
    redis.pcall('ZREM', waiters, id)
  end
  return nil
end

local ahead, head = head_ahead()
local skipped = 0
if ahead and barge then
  ahead, head, skipped = nil, nil, 1
end
if not ahead and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then
  if ARGV[3] ~= '' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ttl)
  end
  if ARGV[4] ~= '' then
    redis.call('PUBLISH', ARGV[4], 'acquired')
  end
  local kept = queue(false)
  return {1, bump(KEYS[2], fence_ttl), 0, 'string', 1, kept, skipped}
end
local kind = redis.call('TYPE', KEYS[1])['ok']
local value = kind == 'string' and redis.call('GET', KEYS[1])
if value == 'redlock:shared' then
  return {0, 0, redis.call('PTTL', KEYS[1]), kind, 1, 'readers', 0, 1}
end
-- Ours only with an expiry: a string without one is application data, whatever it holds.
if value == ARGV[1] and redis.call('PTTL', KEYS[1]) >= 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  if redis.call('PEXPIRE', KEYS[3], ttl) == 0 and ARGV[3] ~= '' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ttl)
  end
  local kept = queue(false)
  return {2, bump(KEYS[2], fence_ttl), 0, kind, 1, kept}
end
local record_kind = redis.call('TYPE', KEYS[3])['ok']
local announces = 0
local record = false
if record_kind ~= 'none' then
  announces = 1
end
if record_kind == 'string' then
  record = redis.call('GET', KEYS[3])
end
local joined = queue(true)
local fair_mode = marked and 1 or 0
if ahead and kind == 'none' then
  -- Free, but another waiter's turn: busy until it takes the lock, or until its heartbeat lapses.
  return {0, 0, ahead, kind, 1, false, joined[1], 0, 1, joined[2], joined[3], head, fair_mode}
end
return {0, 0, redis.call('PTTL', KEYS[1]), kind, announces, record, joined[1], 0, 0, joined[2], joined[3], false,
        fair_mode}
