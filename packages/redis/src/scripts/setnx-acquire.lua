-- setnx mode, acquire (seeds 000 and 004): SET key token NX PX ttl, and in the same atomic step
-- INCR the key's fencing counter, so tokens strictly increase per key across holders
-- (Kleppmann, "How to do distributed locking"). On failure, answer the holder's PTTL so the waiter
-- knows how long it may have to wait at most.
-- KEYS[1] lock key, KEYS[2] fencing counter (same hash slot)
-- ARGV[1] random token, ARGV[2] ttl in ms
-- returns {1, fence} when acquired, {0, pttl} when held by someone else
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('INCR', KEYS[2])}
end
return {0, redis.call('PTTL', KEYS[1])}
