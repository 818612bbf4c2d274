-- getset mode, acquire (seed 003): the legacy lock for servers without SET NX PX. The value is
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
