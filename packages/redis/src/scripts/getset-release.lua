-- getset mode, release (seed 003 plus an owner check, atomically): delete only our own value.
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
