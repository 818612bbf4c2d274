-- Release: delete the key only if it still holds our token (the compare-and-delete of the Redis
-- docs' "Distributed locks" page and seed 004), never GET-then-DEL from the client, which races
-- (seed 000's flaw). Then announce the release so waiters wake at once.
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] channel to publish on ('' = none)
-- returns 1 when deleted, 0 when the key was not ours (expired, or another owner's)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= '' then
    redis.call('PUBLISH', ARGV[2], 'released')
  end
  return 1
end
return 0
