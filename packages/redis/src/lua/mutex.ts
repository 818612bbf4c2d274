/**
 * The Lua of the plain-token locks: setnx (SET NX PX with a fence), RedLock's per-master SET NX PX,
 * and the compare-and-delete / compare-and-pexpire every plain token shares (setnx, fair, RedLock).
 */
import { fenceScriptPrologueLua, nextFenceLua } from './fence.js';

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
