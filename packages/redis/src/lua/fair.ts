import { fenceTextLua, nextFenceLua } from './fence.js';

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
export const fairQueueFragmentLua = `-- fair queue fragment (see lua/fair.ts): KEYS[1] lock, KEYS[2] fence, KEYS[3] queue, KEYS[4] deadlines
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

/**
 * The fair mode's multi-lock enqueue (primitives.md section 4.1): in ONE script, the call
 * takes every key of one hash slot whose queue is empty and joins the queue of every other, exactly
 * as fair-acquire does for one key (same layout: lock token, fence, queue, waiter deadlines on the
 * server clock). Scripts run one at a time, so two multi-locks stand in the same relative order in
 * every queue they share: no cycle of waiters can form (the total order ZooKeeper's multi gives).
 * KEYS: per key, its lock, fence, queue and waiters (4 each, one slot)
 * ARGV[1] waiter lease ms, ARGV[2] grant channel prefix, ARGV[3] PUBLISH or SPUBLISH, ARGV[3 + i]
 * the token for key i ("<clientId>.<ttl>.<tag>", as fair-acquire reads it)
 * returns per key i: reply[2i - 1] = 1 and reply[2i] = fence when taken, 0 and the holder's pttl when queued
 */
export const fairEnqueueManyLua = `if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local lease, prefix, publish = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local reply = {}
for i = 1, #KEYS / 4 do
  local lockKey, fenceKey, queueKey, waitersKey = KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i]
  local token = ARGV[3 + i]
  local ttl = tonumber(string.match(token, '^[^.]+%.(%d+)%.'))
  local held = false
  if not redis.call('GET', lockKey) then
    -- Dead heads go; a live head is granted in place (progress never waits for a timer).
    while true do
      local head = redis.call('LPOP', queueKey)
      if not head then break end
      local deadline = tonumber(redis.call('ZSCORE', waitersKey, head))
      redis.call('ZREM', waitersKey, head)
      local client, headTtl = string.match(head, '^([^.]+)%.(%d+)%.')
      if deadline and deadline > now and client then
        redis.call('SET', lockKey, head, 'PX', math.max(1, math.min(tonumber(headTtl), deadline - now)))
        ${nextFenceLua('fence', 'fenceKey')}        if prefix ~= '' then redis.call(publish, prefix .. client, head .. ' ' .. ${fenceTextLua('fence')}) end
        break
      end
    end
    if not redis.call('GET', lockKey) then
      redis.call('SET', lockKey, token, 'PX', ttl)
      ${nextFenceLua('fence', 'fenceKey')}      reply[2 * i - 1], reply[2 * i] = 1, fence
      held = true
    end
  end
  if not held then
    if redis.call('ZADD', waitersKey, now + lease, token) == 1 then redis.call('RPUSH', queueKey, token) end
    redis.call('PEXPIRE', queueKey, lease)
    redis.call('PEXPIRE', waitersKey, lease)
    reply[2 * i - 1], reply[2 * i] = 0, redis.call('PTTL', lockKey)
  end
end
return reply
`;
