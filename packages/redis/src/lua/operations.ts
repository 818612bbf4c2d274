/**
 * The operator scripts (inspect, force-release, leader-info). One key's every structure sits in one
 * hash slot (keys.ts), so each runs as one script, atomic on a single server and on Cluster.
 * KEYS: [1] the lock (setnx, getset, redlock and fair: a string; hash-reentrant: a hash),
 * [2] its fencing counter, [3] [4] the fair mutex's queue and waiters' deadlines,
 * [5]..[8] the read-write lock's holders, meta, queue, waiters, [9]..[12] the semaphore's
 * (lua/kinds.ts), [13] the forced-release marker.
 */

const clockAndHoldsLua = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local letters = { r = 'read', w = 'write', p = 'permit' }
local function kindOf(token)
  return letters[string.match(token, '^[^.]+%.%d+%.([rwp])') or ''] or 'permit'
end
`;

/**
 * Returns { waiters, then per hold: kind, owner, fence, ttlLeftMs } ('' where unknown). A string
 * lock without an expiry is not a hold (a fencing counter of a tagged key); getset's value is
 * "<expiry on the client's clock>:<token>", read against ARGV[1] (the caller's clock; '' otherwise).
 */
export const inspectLua = `${clockAndHoldsLua}
local out = { 0 }
local function add(kind, owner, fence, ttl)
  out[#out + 1] = kind; out[#out + 1] = owner; out[#out + 1] = fence; out[#out + 1] = tostring(ttl)
end
local fence = redis.call('GET', KEYS[2]) or ''
local lockType = redis.call('TYPE', KEYS[1]).ok
if lockType == 'string' then
  if ARGV[1] ~= '' then
    local expiry = tonumber(string.match(redis.call('GET', KEYS[1]), '^(%d+):') or '')
    if expiry and expiry > tonumber(ARGV[1]) then add('mutex', '', '', expiry - tonumber(ARGV[1])) end
  else
    local pttl = redis.call('PTTL', KEYS[1])
    if pttl > 0 then add('mutex', '', fence, pttl) end
  end
elseif lockType == 'hash' then
  local pttl = redis.call('PTTL', KEYS[1])
  for _, owner in ipairs(redis.call('HKEYS', KEYS[1])) do
    if owner ~= '' and pttl > 0 then add('mutex', owner, fence, pttl) end
  end
end
local function kinds(holdersKey, metaKey)
  local solo = redis.call('HGET', metaKey, 'solo')
  if solo then
    local pttl = redis.call('PTTL', metaKey)
    if pttl > 0 then add(kindOf(solo), '', redis.call('HGET', metaKey, solo) or '', pttl) end
  end
  local held = redis.call('ZRANGEBYSCORE', holdersKey, '(' .. now, '+inf', 'WITHSCORES')
  for i = 1, #held, 2 do add(kindOf(held[i]), '', redis.call('HGET', metaKey, held[i]) or '', tonumber(held[i + 1]) - now) end
end
kinds(KEYS[5], KEYS[6])
kinds(KEYS[9], KEYS[10])
for _, waitersKey in ipairs({ KEYS[4], KEYS[8], KEYS[12] }) do
  out[1] = out[1] + redis.call('ZCOUNT', waitersKey, '(' .. now, '+inf')
end
return out
`;

/**
 * Removes every hold (the lock, every read, write and permit hold; waiters stay queued) and records
 * each removed token in the marker hash (token -> ARGV[1], the forcing client's id) for ARGV[2] ms,
 * where a holder's refused renewal reads it. Publishes on ARGV[3] (the release channel) so setnx
 * and hash-reentrant waiters try at once. Returns the number of holds removed.
 */
export const forceReleaseLua = `${clockAndHoldsLua}
local removed = 0
local function mark(token)
  redis.call('HSET', KEYS[13], token, ARGV[1])
  removed = removed + 1
end
local lockType = redis.call('TYPE', KEYS[1]).ok
if lockType == 'string' and redis.call('PTTL', KEYS[1]) ~= -1 then
  local value = redis.call('GET', KEYS[1])
  mark(value)
  local getsetToken = string.match(value, '^%d+:(.+)$')
  if getsetToken then redis.call('HSET', KEYS[13], getsetToken, ARGV[1]) end
  redis.call('DEL', KEYS[1])
elseif lockType == 'hash' then
  for _, owner in ipairs(redis.call('HKEYS', KEYS[1])) do if owner ~= '' then mark(owner) end end
  redis.call('DEL', KEYS[1])
end
local function kinds(holdersKey, metaKey)
  local solo = redis.call('HGET', metaKey, 'solo')
  if solo then
    mark(solo)
    redis.call('HDEL', metaKey, solo, 'solo', 'writer')
  end
  for _, token in ipairs(redis.call('ZRANGE', holdersKey, 0, -1)) do
    mark(token)
    redis.call('HDEL', metaKey, token)
  end
  redis.call('DEL', holdersKey)
  redis.call('HDEL', metaKey, 'writer')
end
kinds(KEYS[5], KEYS[6])
kinds(KEYS[9], KEYS[10])
if removed > 0 then
  redis.call('PEXPIRE', KEYS[13], ARGV[2])
  redis.call('PUBLISH', ARGV[3], 'forced')
end
return removed
`;

/** The lock's value, the setnx election's leader record and the fence: { value, record, fence } ('' when absent). */
export const leaderInfoLua = `return { redis.call('GET', KEYS[1]) or '', redis.call('GET', KEYS[3]) or '', redis.call('GET', KEYS[2]) or '' }
`;
