-- redlock mode, acquire on one master (seed 004): SET key token NX PX ttl. No fencing counter:
-- independent masters cannot give one order. On failure, answer the holder's PTTL.
-- KEYS[1] lock key; ARGV[1] random token, ARGV[2] ttl in ms
-- returns {1, 0} when acquired, {0, pttl} when held by someone else
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, 0}
end
return {0, redis.call('PTTL', KEYS[1])}
