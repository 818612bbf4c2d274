-- hash-reentrant mode, renew (seed 001, Redisson's watchdog renewExpirationAsync): extend the
-- lease only while the owner still holds the hash.
-- KEYS[1] lock hash; ARGV[1] owner id, ARGV[2] ttl in ms
-- returns 1 when extended, 0 when the owner holds nothing
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
