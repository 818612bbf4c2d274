import type { Cluster, Redis } from 'ioredis';
import { fenceTextLua, nextFenceLua } from './fence-lua.js';

/**
 * The fair mode's multi-lock enqueue (issue 17; primitives.md section 4.1): in ONE script, the call
 * takes every key of one hash slot whose queue is empty and joins the queue of every other, exactly
 * as fair-acquire does for one key (same layout: lock token, fence, queue, waiter deadlines on the
 * server clock). Scripts run one at a time, so two multi-locks stand in the same relative order in
 * every queue they share: no cycle of waiters can form (the total order ZooKeeper's multi gives).
 * KEYS: per key, its lock, fence, queue and waiters (4 each, one slot)
 * ARGV[1] waiter lease ms, ARGV[2] grant channel prefix, ARGV[3] PUBLISH or SPUBLISH, ARGV[3 + i]
 * the token for key i ("<clientId>.<ttl>.<tag>", as fair-acquire reads it)
 * returns per key i: reply[2i - 1] = 1 and reply[2i] = fence when taken, 0 and the holder's pttl when queued
 */
export const fairEnqueueManyLua = `if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local lease, prefix, publish = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local reply = {}
for i = 1, #KEYS / 4 do
  local lockKey, fenceKey, queueKey, waitersKey = KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i]
  local token = ARGV[3 + i]
  local ttl = tonumber(string.match(token, '^[^.]+%.(%d+)%.'))
  local held = false
  if not redis.call('GET', lockKey) then
    -- Dead heads go; a live head is granted in place (progress never waits for a timer).
    while true do
      local head = redis.call('LPOP', queueKey)
      if not head then break end
      local deadline = tonumber(redis.call('ZSCORE', waitersKey, head))
      redis.call('ZREM', waitersKey, head)
      local client, headTtl = string.match(head, '^([^.]+)%.(%d+)%.')
      if deadline and deadline > now and client then
        redis.call('SET', lockKey, head, 'PX', math.max(1, math.min(tonumber(headTtl), deadline - now)))
        ${nextFenceLua('fence', 'fenceKey')}        if prefix ~= '' then redis.call(publish, prefix .. client, head .. ' ' .. ${fenceTextLua('fence')}) end
        break
      end
    end
    if not redis.call('GET', lockKey) then
      redis.call('SET', lockKey, token, 'PX', ttl)
      ${nextFenceLua('fence', 'fenceKey')}      reply[2 * i - 1], reply[2 * i] = 1, fence
      held = true
    end
  end
  if not held then
    if redis.call('ZADD', waitersKey, now + lease, token) == 1 then redis.call('RPUSH', queueKey, token) end
    redis.call('PEXPIRE', queueKey, lease)
    redis.call('PEXPIRE', waitersKey, lease)
    reply[2 * i - 1], reply[2 * i] = 0, redis.call('PTTL', lockKey)
  end
end
return reply
`;

const name = 'deadbolt_fair_enqueue_many';
const defined = new WeakSet<Redis | Cluster>();

/** Runs the script (ioredis: numberOfKeys omitted, so the key count goes first). */
export function runFairEnqueueMany(
  connection: Redis | Cluster,
  keys: readonly string[],
  waiterLeaseMs: number,
  channelPrefix: string,
  publish: string,
  tokens: readonly string[],
): Promise<unknown> {
  if (!defined.has(connection)) {
    connection.defineCommand(name, { lua: fairEnqueueManyLua });
    defined.add(connection);
  }
  const call = (connection as unknown as Record<string, (...args: (string | number)[]) => Promise<unknown>>)[name]!;
  return call.call(connection, keys.length, ...keys, waiterLeaseMs, channelPrefix, publish, ...tokens);
}
