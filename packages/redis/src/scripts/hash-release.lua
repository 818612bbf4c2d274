-- hash-reentrant mode, release one hold (seed 001, Redisson's unlockInnerAsync): decrement the
-- owner's count; at zero delete the hash and publish on the lock's channel so waiters wake.
-- KEYS[1] lock hash; ARGV[1] owner id, ARGV[2] channel
-- returns 1 when a hold was released (2 when it was the last), 0 when the owner held nothing
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) > 0 then
  return 1
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'released')
return 2
