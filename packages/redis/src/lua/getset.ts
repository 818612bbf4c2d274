/** The Lua of the getset mode (seed 003): expiry on the client's clock, an owner token beside it. */

export const getsetAcquireLua = `-- getset mode, acquire (seed 003): the legacy lock for servers without SET NX PX. The value is
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
`;

export const getsetReleaseLua = `-- getset mode, release (seed 003 plus an owner check, atomically): delete only our own value.
-- The seed deletes only while "now < expiresAt"; past that another client may already hold it, so
-- the token decides what is ours, and the answer says whether our lease was still valid.
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] now (caller's clock, ms)
-- returns 1 when our valid lock was deleted, 0 when it was not ours (or had expired by our clock)
local value = redis.call('GET', KEYS[1])
if not value then
  return 0
end
local expiry, token = string.match(value, '^(%d+):(.*)$')
if token ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if tonumber(expiry) < tonumber(ARGV[2]) then
  return 0
end
return 1
`;

export const getsetRenewLua = `-- getset mode, renew: write a later expiry only if the value is still ours and not yet expired
-- by the caller's clock (once expired, another client may take it over at any moment).
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] now (caller's clock, ms), ARGV[3] new value, ARGV[4] gc ttl in ms
-- returns 1 when extended, 0 when not ours or expired
local value = redis.call('GET', KEYS[1])
if not value then
  return 0
end
local expiry, token = string.match(value, '^(%d+):(.*)$')
if token ~= ARGV[1] or tonumber(expiry) < tonumber(ARGV[2]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
return 1
`;
