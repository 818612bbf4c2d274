/**
 * Read-write locks and semaphores on the fair mode's queue (primitives.md sections 2.3 and
 * 3.3). One primitive of one key keeps five keys in one hash slot (kindKeys in modes/fair-kinds.ts):
 * KEYS[1] holders, a zset token -> lease end in SERVER ms (TIME), so a crashed holder frees only its
 * own hold at its own lease end (DistributedLock keeps one ttl for the whole reader set, Redisson a
 * key per hold and no lease on RSemaphore); KEYS[2] meta, a hash token -> fence plus 'writer' (the
 * write holder's token) or 'permits' (the semaphore's size, so a client with another size is
 * refused); KEYS[3] the FIFO queue of waiter tokens; KEYS[4] the waiters' deadlines (server ms);
 * KEYS[5] the fencing counter (never expires, as the mutex's).
 * Tokens read "<clientId>.<ttlMs>.<mode><n>", mode r (read), w (write) or p (permit): a script finds
 * the waiter's grant channel, lease and kind in the token alone.
 * Grants happen IN PLACE in the script that frees room (release, expiry seen by any call, a waiter
 * leaving), head first: a writer alone, a run of consecutive readers together, one waiter per free
 * permit, each with one message on its client's grant channel. So neither readers nor writers
 * starve (Redisson's RReadWriteLock admits readers past a waiting writer), and nobody polls
 * (redis-semaphore polls on client clocks).
 */
import { fenceTextLua, nextFenceLua } from './fence.js';
import { standaloneGrantPrefix } from './fair.js';

const kindPreludeLua = `-- kind prelude (see lua/kinds.ts): holders, meta, queue, waiters, fence
if redis.replicate_commands then redis.replicate_commands() end -- TIME before writes (Redis < 5)
local holdersKey, metaKey, queueKey, waitersKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
`;

/** The server clock, read once per script where a path needs it (the release fast path does not). */
const kindClockLua = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
`;

/** The functions of the general path, defined after a script's uncontended fast path (closures cost per call). */
const kindFragmentLua = `-- kind fragment (see lua/kinds.ts)

-- client id, ttl, mode of a token; nil for text this module did not write
local function parse(token)
  return string.match(token, '^([^.]+)%.(%d+)%.([rwp])')
end

-- A solo hold (taken by the acquire fast path: meta's 'solo' field names its token, and meta expires
-- at its lease end; no holders zset) becomes an ordinary one, so the general path below sees every
-- hold in the zset. Every script calls this before its general path. The lease end is read as
-- now + PTTL (both the server's clock; within a millisecond of meta's expiry, which tidy() then
-- aligns with the zset), so a solo hold keeps the lease end it was given.
local function unsolo()
  local solo = redis.call('HGET', metaKey, 'solo')
  if not solo then return end
  local untilMs = now + redis.call('PTTL', metaKey)
  redis.call('ZADD', holdersKey, untilMs, solo)
  redis.call('PEXPIREAT', holdersKey, untilMs)
  redis.call('HDEL', metaKey, 'solo')
end

-- Holders whose lease ended leave, each on its own: no other hold is touched.
local function purge()
  local ended = redis.call('ZRANGEBYSCORE', holdersKey, '-inf', now)
  if #ended == 0 then return end
  for _, token in ipairs(ended) do
    redis.call('ZREM', holdersKey, token)
    redis.call('HDEL', metaKey, token)
  end
  local writer = redis.call('HGET', metaKey, 'writer')
  if writer and not redis.call('ZSCORE', holdersKey, writer) then redis.call('HDEL', metaKey, 'writer') end
end

-- Whether a hold of this mode fits beside the current holders (queue order is the caller's business).
local function room(mode)
  if mode == 'p' then
    return redis.call('ZCARD', holdersKey) < tonumber(redis.call('HGET', metaKey, 'permits') or '1')
  end
  if mode == 'r' then return redis.call('HEXISTS', metaKey, 'writer') == 0 end
  return redis.call('EXISTS', holdersKey) == 0
end

-- Every grant takes a new fence, readers and permits too (as the memory backend and ZooKeeper's czxid).
local function hold(token, mode, leaseMs)
  ${nextFenceLua('fence', 'fenceKey')}
  redis.call('ZADD', holdersKey, now + leaseMs, token)
  redis.call('HSET', metaKey, token, fence)
  if mode == 'w' then redis.call('HSET', metaKey, 'writer', token) end
  return fence
end

local function release(token)
  if redis.call('ZREM', holdersKey, token) == 0 then return 0 end
  redis.call('HDEL', metaKey, token)
  if redis.call('HGET', metaKey, 'writer') == token then redis.call('HDEL', metaKey, 'writer') end
  return 1
end

-- Grants in place, from the head, while the head fits: a dead head (deadline passed) is dropped.
-- The claim lasts the waiter's ttl but never past its waiter deadline, so a grant to a waiter that
-- has just died idles its room no longer than the waiter lease it had left; its client extends it.
local function grantWaiting(channelPrefix, publish)
  while true do
    local head = redis.call('LINDEX', queueKey, 0)
    if not head then return end
    local deadline = tonumber(redis.call('ZSCORE', waitersKey, head))
    local client, ttl, mode = parse(head)
    if client and deadline and deadline > now then
      if not room(mode) then return end
      local fence = hold(head, mode, math.max(1, math.min(tonumber(ttl), deadline - now)))
      if channelPrefix ~= '' then redis.call(publish, channelPrefix .. client, head .. ' ' .. ${fenceTextLua('fence')}) end
    end
    redis.call('LPOP', queueKey)
    redis.call('ZREM', waitersKey, head)
  end
end

-- Holders and meta live until the last lease or the queue ends, whichever is later: a crashed
-- client's hold leaves no key behind, and the stored permits stay while anyone holds or waits.
local function tidy()
  local last = redis.call('ZRANGE', holdersKey, -1, -1, 'WITHSCORES')
  local untilMs = tonumber(last[2] or '0')
  local queueMs = redis.call('PTTL', queueKey)
  if queueMs > 0 then untilMs = math.max(untilMs, now + queueMs) end
  if untilMs <= now then
    redis.call('DEL', metaKey)
    return
  end
  if last[2] then redis.call('PEXPIREAT', holdersKey, untilMs) end
  redis.call('PEXPIREAT', metaKey, untilMs)
end
`;

export const kindAcquireLua = `${kindPreludeLua}
-- read / write / permit, acquire, re-check and heartbeat in one script (idempotent per token).
-- ARGV[1] token, ARGV[2] ttl ms, ARGV[3] waiter lease ms, ARGV[4] join ('1' queue, '0' never: a
-- tryAcquire neither barges past the queue nor joins it), ARGV[5] permits ('' for a read-write
-- lock), ARGV[6] the write token a read downgrades ('' for none), ARGV[7] grant channel prefix,
-- ARGV[8] PUBLISH or SPUBLISH. Trailing ones are left out when empty, and the channel on a single
-- server ('${standaloneGrantPrefix}', PUBLISH): a plain read or write sends four, as the fair mutex.
-- returns {1, fence} when held (taken now, or granted earlier: extended to the ttl), {0, ms to the
-- first holder's lease end or -1} otherwise, {-1, stored permits} when the semaphore has another size
local token, ttl = ARGV[1], tonumber(ARGV[2])
local mode = string.match(token, '^[^.]+%.%d+%.([rwp])')
local permits, downgradeOf = ARGV[5] or '', ARGV[6] or ''
-- The uncontended acquire: no holder, no queue, no meta (so no stored permits and no downgrade):
-- any kind fits, nothing to purge or grant. The hold is a solo hold, all in meta ('solo' names its
-- token), and meta expires at its lease end, on the server's clock (a crash frees it then): one key
-- written and one expiry, as the mutex's SET PX, and no TIME. The first general path to run turns
-- it into an ordinary zset hold (unsolo). Four commands, as the mutex's three plus the kind's fields.
if redis.call('EXISTS', holdersKey, queueKey, metaKey) == 0 then
  ${nextFenceLua('fence', 'fenceKey')}
  if mode == 'w' then
    redis.call('HSET', metaKey, token, fence, 'solo', token, 'writer', token)
  elseif permits ~= '' then
    redis.call('HSET', metaKey, token, fence, 'solo', token, 'permits', permits)
  else
    redis.call('HSET', metaKey, token, fence, 'solo', token)
  end
  redis.call('PEXPIRE', metaKey, ttl)
  return {1, fence}
end
${kindClockLua}${kindFragmentLua}
unsolo()
purge()
if permits ~= '' then
  local stored = redis.call('HGET', metaKey, 'permits')
  if stored and stored ~= permits then return {-1, tonumber(stored)} end
  if not stored then redis.call('HSET', metaKey, 'permits', permits) end
end
local function held()
  if not redis.call('ZSCORE', holdersKey, token) then return nil end
  redis.call('ZADD', holdersKey, now + ttl, token)
  tidy()
  return {1, tonumber(redis.call('HGET', metaKey, token))}
end
local mine = held()
if mine then return mine end
-- A write holder's read is admitted at once, ahead of queued writers (Curator after CURATOR-621).
if downgradeOf ~= '' and redis.call('HGET', metaKey, 'writer') == downgradeOf then
  local fence = hold(token, mode, ttl)
  tidy()
  return {1, fence}
end
if redis.call('EXISTS', queueKey) == 1 then
  grantWaiting(ARGV[7] or '${standaloneGrantPrefix}', ARGV[8] or 'PUBLISH')
  mine = held()
  if mine then return mine end
end
if redis.call('EXISTS', queueKey) == 0 and room(mode) then
  local fence = hold(token, mode, ttl)
  tidy()
  return {1, fence}
end
if ARGV[4] == '1' then
  local lease = tonumber(ARGV[3])
  if redis.call('ZADD', waitersKey, now + lease, token) == 1 then
    redis.call('RPUSH', queueKey, token)
  end
  -- Only live waiters refresh these: when every waiter is gone, the queue goes too.
  redis.call('PEXPIRE', queueKey, lease)
  redis.call('PEXPIRE', waitersKey, lease)
end
tidy()
local first = redis.call('ZRANGE', holdersKey, 0, 0, 'WITHSCORES')
if first[2] then return {0, tonumber(first[2]) - now} end
return {0, -1}
`;

export const kindReleaseLua = `${kindPreludeLua}
-- read / write / permit, release: only our own hold; the room it frees goes to the queue's head(s).
-- A retried release (lost reply) finds nothing of ours and touches nothing else.
-- ARGV[1] token, ARGV[2] grant channel prefix, ARGV[3] PUBLISH or SPUBLISH (both left out on a
-- single server: '${standaloneGrantPrefix}' and PUBLISH)
-- returns 1 when the hold was ours, 0 otherwise
-- The uncontended release: ours is the solo hold (see the acquire's fast path), so nobody else holds
-- or waits (any other caller's general path would have ended the solo hold), and meta still exists,
-- so its lease, which meta's expiry is, still runs: the key goes. Two commands, no clock (the
-- mutex's release sends three).
if redis.call('HGET', metaKey, 'solo') == ARGV[1] then
  redis.call('DEL', metaKey)
  return 1
end
${kindClockLua}${kindFragmentLua}
unsolo()
purge()
local ours = release(ARGV[1])
grantWaiting(ARGV[2] or '${standaloneGrantPrefix}', ARGV[3] or 'PUBLISH')
tidy()
return ours
`;

export const kindLeaveLua = `${kindPreludeLua}${kindClockLua}${kindFragmentLua}
-- read / write / permit, a waiter gives up (timeout, abort, an attempt whose answer was lost): no
-- entry is left; a grant that raced the give-up is released; whoever now fits is granted (a
-- writer leaving the head lets the readers behind it in).
-- ARGV[1] token, ARGV[2] grant channel prefix, ARGV[3] PUBLISH or SPUBLISH
-- returns 2 when a grant to us was given back, 1 otherwise
unsolo()
redis.call('LREM', queueKey, 1, ARGV[1])
redis.call('ZREM', waitersKey, ARGV[1])
purge()
local granted = release(ARGV[1])
grantWaiting(ARGV[2], ARGV[3])
tidy()
return granted + 1
`;

export const kindRenewLua = `${kindPreludeLua}${kindClockLua}${kindFragmentLua}
-- read / write / permit, renew: a new lease end (server clock) for a hold that is still ours and
-- still running; a lease already ended is not revived (another waiter may be about to get its room).
-- ARGV[1] token, ARGV[2] ttl ms
-- returns 1 when extended, 0 when the hold is gone
-- A solo hold still exists only while its lease runs (meta expires at its end): extend it in place.
if redis.call('HGET', metaKey, 'solo') == ARGV[1] then
  redis.call('PEXPIRE', metaKey, ARGV[2])
  return 1
end
unsolo()
local score = redis.call('ZSCORE', holdersKey, ARGV[1])
if not score or tonumber(score) <= now then return 0 end
redis.call('ZADD', holdersKey, now + tonumber(ARGV[2]), ARGV[1])
tidy()
return 1
`;

/**
 * A solo hold is meta's 'solo' field (meta expires at its lease end); any other is a member of the
 * holders zset whose score, its lease end in server ms, is still ahead of the server's TIME.
 */
export const kindHoldsLua = `local holdersKey, metaKey = KEYS[1], KEYS[2]
if redis.call('HGET', metaKey, 'solo') == ARGV[1] then return 1 end
local score = redis.call('ZSCORE', holdersKey, ARGV[1])
if not score then return 0 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if tonumber(score) > now then return 1 end
return 0`;
