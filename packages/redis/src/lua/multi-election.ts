/**
 * Scripts of the setnx mode's multi-lock and election (the lock a plain token under the key, its
 * fencing counter a sibling key in the same slot). The multi-lock takes a variable number of keys.
 */
import { fenceScriptPrologueLua, nextFenceLua } from './fence.js';

export const acquireManyLua = `-- setnx multi-lock: every key or none, in one atomic step, with a fence per key.
-- KEYS[1..n] lock keys, KEYS[n+1..2n] their fencing counters (all in one hash slot)
-- ARGV[1] random token, ARGV[2] ttl in ms
-- returns {1, fence1, ..., fencen} when acquired, {0, index, pttl} when key number index is held
${fenceScriptPrologueLua}local n = #KEYS / 2
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then return {0, i, redis.call('PTTL', KEYS[i])} end
end
local reply = {1}
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  ${nextFenceLua('fence', 'KEYS[n + i]')}  reply[i + 1] = fence
end
return reply
`;

export const electAcquireLua = `-- election on the setnx lock: SET NX PX and INCR the fence (the term), and beside the lock the
-- leader record "<token>\\n<participant id>". The record never expires: it names the leader only while
-- its token is the lock's value, so an expired or released term names nobody.
-- KEYS[1] lock key, KEYS[2] fencing counter, KEYS[3] leader record (one slot)
-- ARGV[1] random token, ARGV[2] ttl in ms, ARGV[3] participant id
-- returns {1, term} when elected, {0, pttl} when another leader holds the lock
${fenceScriptPrologueLua}if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SET', KEYS[3], ARGV[1] .. '\\n' .. ARGV[3])
  ${nextFenceLua('term', 'KEYS[2]')}  return {1, term}
end
return {0, redis.call('PTTL', KEYS[1])}
`;

export const electLeaderLua = `-- the current leader's id: the record's id if its token is the lock's value, else nil
-- KEYS[1] lock key, KEYS[2] leader record
local token = redis.call('GET', KEYS[1])
if not token then return false end
local record = redis.call('GET', KEYS[2])
if record and string.sub(record, 1, #token + 1) == token .. '\\n' then return string.sub(record, #token + 2) end
return false
`;
