/** The Lua of the hash-reentrant mode (seed 001, Redisson's RedissonLock): hold counts per owner in a hash. */
import { fenceScriptPrologueLua, nextFenceLua } from './fence.js';

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

export const hashUndoLua = `-- hash-reentrant mode, undo an attempt whose answer was lost (a frozen server runs it
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
