-- hash-reentrant mode, acquire or re-enter (seed 001, Redisson's RedissonLock.tryLockInnerAsync):
-- the lock is a hash, field = owner id, value = hold count. A first hold also INCRs the key's
-- fencing counter; a re-entry returns the current fence (the same holder, the same token).
-- KEYS[1] lock hash, KEYS[2] fencing counter (same hash slot)
-- ARGV[1] ttl in ms, ARGV[2] owner id
-- returns {1, fence} when held (first hold or re-entry), {0, pttl} when another owner holds it
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return {1, redis.call('INCR', KEYS[2])}
end
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
end
return {0, redis.call('PTTL', KEYS[1])}
