-- getset mode, renew: write a later expiry only if the value is still ours and not yet expired
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
