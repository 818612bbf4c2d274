/**
 * The Lua sources, compiled into the JavaScript so a bundled app (esbuild, serverless) needs no file
 * from the package at run time. One constant per script; the .lua text is kept verbatim.
 */
import { fenceScriptPrologueLua, fenceTextLua, nextFenceLua } from './fence-lua.js';

export const compareDeleteLua = `-- Release: delete the key only if it still holds our token (the compare-and-delete of the Redis
-- docs' "Distributed locks" page and seed 004), never GET-then-DEL from the client, which races
-- (seed 000's flaw). Then announce the release so waiters wake at once.
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] channel to publish on ('' = none)
-- returns 1 when deleted, 0 when the key was not ours (expired, or another owner's)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= '' then
    redis.call('PUBLISH', ARGV[2], 'released')
  end
  return 1
end
return 0
`;

export const comparePexpireLua = `-- Renew: extend the lease only if the key still holds our token (compare-and-pexpire).
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] ttl in ms
-- returns 1 when extended, 0 when the key was not ours
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`;

export const getsetAcquireLua = `-- getset mode, acquire (seed 003): the legacy lock for servers without SET NX PX. The value is
-- "<expiresAt>:<token>", expiresAt in the CLIENT's epoch ms: whose clock runs ahead can take a lock
-- that has not expired yet (capabilities.clock = 'client'). The seed's steps, in one script:
-- SETNX; on failure GET the stored expiry; if it is past (by the caller's clock) GETSET a new value
-- and win only if the old value returned is the one we judged expired. The token beside the expiry
-- is our addition: it lets release and renew recognise their own lock.
-- The PEXPIRE is only garbage collection for abandoned keys, set well after the stored expiry.
-- KEYS[1] lock key
-- ARGV[1] new value "<expiresAt>:<token>", ARGV[2] now (caller's clock, ms), ARGV[3] gc ttl in ms
-- returns {1, 0} when acquired, {0, ms until the stored expiry} when held
if redis.call('SETNX', KEYS[1], ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {1, 0}
end
local old = redis.call('GET', KEYS[1])
local oldExpiry = tonumber(string.match(old or '', '^(%d+):'))
local now = tonumber(ARGV[2])
if oldExpiry == nil then
  -- Not a value this algorithm wrote: treat it as held for as long as the server keeps it.
  return {0, redis.call('PTTL', KEYS[1])}
end
if oldExpiry < now then
  local previous = redis.call('GETSET', KEYS[1], ARGV[1])
  if previous == old then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return {1, 0}
  end
end
return {0, oldExpiry - now}
`;

export const getsetReleaseLua = `-- getset mode, release (seed 003 plus an owner check, atomically): delete only our own value.
-- The seed deletes only while "now < expiresAt"; past that another client may already hold it, so
-- the token decides what is ours, and the answer says whether our lease was still valid.
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] now (caller's clock, ms)
-- returns 1 when our valid lock was deleted, 0 when it was not ours (or had expired by our clock)
local value = redis.call('GET', KEYS[1])
if not value then
  return 0
end
local expiry, token = string.match(value, '^(%d+):(.*)$')
if token ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if tonumber(expiry) < tonumber(ARGV[2]) then
  return 0
end
return 1
`;

export const getsetRenewLua = `-- getset mode, renew: write a later expiry only if the value is still ours and not yet expired
-- by the caller's clock (once expired, another client may take it over at any moment).
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] now (caller's clock, ms), ARGV[3] new value, ARGV[4] gc ttl in ms
-- returns 1 when extended, 0 when not ours or expired
local value = redis.call('GET', KEYS[1])
if not value then
  return 0
end
local expiry, token = string.match(value, '^(%d+):(.*)$')
if token ~= ARGV[1] or tonumber(expiry) < tonumber(ARGV[2]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
return 1
`;

export const hashAcquireLua = `-- hash-reentrant mode, acquire or re-enter (seed 001, Redisson's RedissonLock.tryLockInnerAsync):
-- the lock is a hash, field = owner id, value = hold count. A first hold also INCRs the key's
-- fencing counter; a re-entry returns the current fence (the same holder, the same token).
-- The field '' (never an owner: owners are non-empty) names the last attempt that added a hold, so
-- that hash-undo can take back exactly that hold when its answer was lost.
-- KEYS[1] lock hash, KEYS[2] fencing counter (same hash slot)
-- ARGV[1] ttl in ms, ARGV[2] owner id, ARGV[3] attempt id ('' = none)
-- returns {1, fence} when held (first hold or re-entry), {0, pttl} when another owner holds it
${fenceScriptPrologueLua}if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], '', ARGV[3]) end
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ${nextFenceLua('fence', 'KEYS[2]')}  return {1, fence}
end
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], '', ARGV[3]) end
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
end
return {0, redis.call('PTTL', KEYS[1])}
`;

export const hashReleaseLua = `-- hash-reentrant mode, release one hold (seed 001, Redisson's unlockInnerAsync): decrement the
-- owner's count; at zero delete the hash and, if someone waits (the marker), publish on the lock's channel.
-- KEYS[1] lock hash, KEYS[2] waiters' marker; ARGV[1] owner id, ARGV[2] channel
-- returns 1 when a hold was released (2 when it was the last), 0 when the owner held nothing
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) > 0 then
  return 1
end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PUBLISH', ARGV[2], 'released')
end
return 2
`;

export const hashUndoLua = `-- hash-reentrant mode, undo an attempt whose answer was lost (issue 14: a frozen server runs it
-- later). Takes back the hold only if the hash still names this attempt as the last to add one; if
-- another hold came since, leaving ours costs at most the lease's ttl, taking theirs would be unsafe.
-- KEYS[1] lock hash, KEYS[2] waiters' marker; ARGV[1] owner id, ARGV[2] attempt id, ARGV[3] channel
-- returns 1 when a hold was taken back (2 when it was the last), 0 when this attempt added none
if redis.call('HGET', KEYS[1], '') ~= ARGV[2] then
  return 0
end
redis.call('HDEL', KEYS[1], '')
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) > 0 then
  return 1
end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PUBLISH', ARGV[3], 'released')
end
return 2
`;

export const hashRenewLua = `-- hash-reentrant mode, renew (seed 001, Redisson's watchdog renewExpirationAsync): extend the
-- lease only while the owner still holds the hash.
-- KEYS[1] lock hash; ARGV[1] owner id, ARGV[2] ttl in ms
-- returns 1 when extended, 0 when the owner holds nothing
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`;

export const setNxPxLua = `-- redlock mode, acquire on one master (seed 004): SET key token NX PX ttl. No fencing counter:
-- independent masters cannot give one order. On failure, answer the holder's PTTL.
-- KEYS[1] lock key; ARGV[1] random token, ARGV[2] ttl in ms
-- returns {1, 0} when acquired, {0, pttl} when held by someone else
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, 0}
end
return {0, redis.call('PTTL', KEYS[1])}
`;

export const setnxAcquireLua = `-- setnx mode, acquire (seeds 000 and 004): SET key token NX PX ttl, and in the same atomic step
-- INCR the key's fencing counter, so tokens strictly increase per key across holders
-- (Kleppmann, "How to do distributed locking"). On failure, answer the holder's PTTL so the waiter
-- knows how long it may have to wait at most.
-- KEYS[1] lock key, KEYS[2] fencing counter (same hash slot)
-- ARGV[1] random token, ARGV[2] ttl in ms
-- returns {1, fence} when acquired, {0, pttl} when held by someone else
${fenceScriptPrologueLua}if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  ${nextFenceLua('fence', 'KEYS[2]')}  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}
`;

export const markWaitingLua = `-- setnx and hash-reentrant: a waiter whose subscription is live marks the key as waited on and
-- asks, in the same atomic step, whether the lock is still there. Releases publish only while the
-- mark exists, so an uncontended cycle sends no PUBLISH (which Redis replicates, and broadcasts to
-- every node of a Cluster); a release before the mark is seen here as a free key.
-- KEYS[1] lock key, KEYS[2] waiters' marker (same hash slot); ARGV[1] marker lifetime in ms
-- returns 1 when the lock is still held, 0 when it is free
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return redis.call('EXISTS', KEYS[1])
`;

export const setnxReleaseLua = `-- setnx mode, release: compare-and-delete (the Redis docs' "Distributed locks" page), then announce
-- the release only if a waiter marked the key as waited on (mark-waiting).
-- KEYS[1] lock key, KEYS[2] waiters' marker; ARGV[1] token, ARGV[2] channel
-- returns 1 when deleted, 0 when the key was not ours (expired, or another owner's)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if redis.call('EXISTS', KEYS[2]) == 1 then
    redis.call('PUBLISH', ARGV[2], 'released')
  end
  return 1
end
return 0
`;

/**
 * Fair mode's queue, as Lua functions every fair script starts with (read-write locks and
 * semaphores reuse them). The layout (primitives.md section 1.3): KEYS[1] the lock (a plain token,
 * as in setnx), KEYS[2] the fencing counter, KEYS[3] the waiter queue (a list of tokens, FIFO),
 * KEYS[4] the waiters' deadlines (a zset, token -> server ms). Tokens read
 * "<clientId>.<ttlMs>.<n>": a script finds the waiter's grant channel and lease in the token alone.
 * Deadlines are on the SERVER clock (TIME), unlike Redisson's RedissonFairLock, which compares
 * client clocks; a dead waiter is dropped when it reaches the head with its deadline passed, so
 * nothing is ever re-scored (Redisson re-scores every waiter on each acquisition: O(N)).
 */
export const fairQueueFragmentLua = `-- fair queue fragment (see lua.ts): KEYS[1] lock, KEYS[2] fence, KEYS[3] queue, KEYS[4] deadlines
if redis.replicate_commands then redis.replicate_commands() end -- TIME before writes (Redis < 5)
local lockKey, fenceKey, queueKey, waitersKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

local function serverNow()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Pops waiters off the head until one is alive (deadline ahead of now); returns it and its
-- deadline, or nil when the queue ran empty. Dead ones cost O(1) each, once.
local function popLiveHead(now)
  while true do
    local head = redis.call('LPOP', queueKey)
    if not head then return nil end
    local deadline = tonumber(redis.call('ZSCORE', waitersKey, head))
    redis.call('ZREM', waitersKey, head)
    if deadline and deadline > now and string.match(head, '^[^.]+%.%d+%.') then return head, deadline end
  end
end

-- Grants the free lock IN PLACE to a popped waiter and tells its client: one message on the
-- client's grant channel ("<token> <fence>"). The claim lasts the waiter's own ttl, but never past
-- its waiter deadline: a grant to a waiter that has just died idles the lock no longer than the
-- waiter lease it had left. The waiter's client extends it to the full ttl.
local function grantTo(head, deadline, now, channelPrefix, publish)
  local client, ttl = string.match(head, '^([^.]+)%.(%d+)%.')
  redis.call('SET', lockKey, head, 'PX', math.max(1, math.min(tonumber(ttl), deadline - now)))
  ${nextFenceLua('fence', 'fenceKey')}  if channelPrefix ~= '' then redis.call(publish, channelPrefix .. client, head .. ' ' .. ${fenceTextLua('fence')}) end
  return fence
end

-- The lock is free: hand it to the first live waiter. Returns true when someone got it.
local function grantNext(now, channelPrefix, publish)
  local head, deadline = popLiveHead(now)
  if not head then return false end
  grantTo(head, deadline, now, channelPrefix, publish)
  return true
end
`;

/**
 * The grant channel prefix on a single server (Sentinel too): fair acquire and release default to
 * it, so the client leaves both channel arguments out there (two fewer per call on the hot path).
 */
export const standaloneGrantPrefix = 'deadbolt:grant:';

/**
 * The fast path of fair acquire and release, ahead of the queue fragment: with nobody queued the
 * scripts do what setnx's do (SET NX PX + INCR; compare-and-delete) and return before the fragment's
 * functions are even defined. Anything else falls through to the full script below it.
 */
export const fairAcquireLua = `-- fair mode, acquire. Fast path first: nobody queued and the key free, so take it as setnx does
-- (SET NX PX, INCR the fence). A held key (ours included: a re-check of a grant) or a non-empty queue
-- falls through to the full script below. replicate_commands comes first: the SET NX counts as a
-- write even when it fails, and the full script reads TIME (Redis < 5).
if redis.replicate_commands then redis.replicate_commands() end
if redis.call('EXISTS', KEYS[3]) == 0 and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  ${nextFenceLua('fence', 'KEYS[2]')}  return {1, fence}
end
${fairQueueFragmentLua}
-- fair mode, acquire / re-check / heartbeat in one script (idempotent per token):
-- ARGV[1] token, ARGV[2] ttl ms, ARGV[3] waiter lease ms, ARGV[4] join ('1' enqueue, '0' never:
-- tryAcquire does not barge past the queue, nor join it), ARGV[5] grant channel prefix, ARGV[6]
-- PUBLISH or SPUBLISH (both left out on a single server: '${standaloneGrantPrefix}' and PUBLISH).
-- returns {1, fence} when held (taken now, or granted earlier: the lease is then extended to the
-- ttl), {0, pttl of the holder} otherwise (queued when join = '1').
local token = ARGV[1]
local holder = redis.call('GET', lockKey)
if holder == token then
  redis.call('PEXPIRE', lockKey, ARGV[2])
  return {1, tonumber(redis.call('GET', fenceKey) or '0')}
end
local now
if not holder then
  if redis.call('EXISTS', queueKey) == 0 then
    redis.call('SET', lockKey, token, 'PX', ARGV[2])
    ${nextFenceLua('fence', 'fenceKey')}    return {1, fence}
  end
  now = serverNow()
  local head, deadline = popLiveHead(now)
  if head == nil or head == token then
    redis.call('SET', lockKey, token, 'PX', ARGV[2])
    ${nextFenceLua('fence', 'fenceKey')}    return {1, fence}
  end
  grantTo(head, deadline, now, ARGV[5] or '${standaloneGrantPrefix}', ARGV[6] or 'PUBLISH')
end
if ARGV[4] == '1' then
  now = now or serverNow()
  local lease = tonumber(ARGV[3])
  if redis.call('ZADD', waitersKey, now + lease, token) == 1 then
    redis.call('RPUSH', queueKey, token)
  end
  -- Only live waiters refresh these: when every waiter is gone, the queue goes too.
  redis.call('PEXPIRE', queueKey, lease)
  redis.call('PEXPIRE', waitersKey, lease)
end
return {0, redis.call('PTTL', lockKey)}
`;

export const fairReleaseLua = `-- fair mode, release: only our own token; hand the lock to the next live waiter in place, or delete it.
-- A retried release (lost reply) finds the next owner's token and touches nothing.
-- ARGV[1] token, ARGV[2] grant channel prefix, ARGV[3] PUBLISH or SPUBLISH (both left out on a
-- single server: '${standaloneGrantPrefix}' and PUBLISH)
-- returns 1 when it was ours (deleted or handed on), 0 otherwise
-- Fast path first (before the queue fragment is defined): not ours, or nobody queued.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if redis.call('EXISTS', KEYS[3]) == 0 then
  redis.call('DEL', KEYS[1])
  return 1
end
${fairQueueFragmentLua}
if not grantNext(serverNow(), ARGV[2] or '${standaloneGrantPrefix}', ARGV[3] or 'PUBLISH') then
  redis.call('DEL', lockKey)
end
return 1
`;

export const fairLeaveLua = `${fairQueueFragmentLua}
-- fair mode, a waiter gives up (timeout or abort): leave no entry behind. If a grant raced the
-- give-up, pass the lock on as a release would; if the lock is free (a holder's lease ran out),
-- grant the next waiter so progress never waits for a timer.
-- ARGV[1] token, ARGV[2] grant channel prefix, ARGV[3] PUBLISH or SPUBLISH
-- returns 2 when the lock had been granted to us (now passed on), 1 otherwise
local holder = redis.call('GET', lockKey)
redis.call('LREM', queueKey, 1, ARGV[1])
redis.call('ZREM', waitersKey, ARGV[1])
if holder and holder ~= ARGV[1] then
  return 1
end
if redis.call('EXISTS', queueKey) == 0 or not grantNext(serverNow(), ARGV[2], ARGV[3]) then
  if holder then redis.call('DEL', lockKey) end
end
if holder then return 2 end
return 1
`;
