-- Renew: extend the lease only if the key still holds our token (compare-and-pexpire).
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] ttl in ms
-- returns 1 when extended, 0 when the key was not ours
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
