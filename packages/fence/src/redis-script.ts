import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/** An ioredis client: a single server (Redis) or a Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * Compare-and-write, atomic in Redis. KEYS[1] the value, KEYS[2] its fence record (same slot).
 * ARGV: fence, op ('set' | 'del'), value, px ('' for none). A recorded fence larger than ours
 * refuses the write and returns it; otherwise the write happens and our fence is recorded. The
 * record never expires: after a delete or the value's expiry it stays as a tombstone.
 */
export const fencedWriteLua = `
local recorded = redis.call('GET', KEYS[2])
if recorded then
  local newer = tonumber(recorded)
  if newer == nil then return redis.error_reply('ERR deadbolt fence record ' .. KEYS[2] .. ' is not a number') end
  if newer > tonumber(ARGV[1]) then return {0, recorded} end
end
if ARGV[2] == 'del' then
  redis.call('DEL', KEYS[1])
elseif ARGV[4] == '' then
  redis.call('SET', KEYS[1], ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
end
redis.call('SET', KEYS[2], ARGV[1])
return {1, ARGV[1]}
`;

const sha = createHash('sha1').update(fencedWriteLua).digest('hex');

/** EVALSHA, and EVAL when the server does not have the script yet (NOSCRIPT: first use, a restart, SCRIPT FLUSH). */
export async function runFencedWrite(redis: RedisClient, keys: [string, string], args: (string | Buffer)[]): Promise<[number, string]> {
  try {
    return (await redis.evalsha(sha, 2, ...keys, ...args)) as [number, string];
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return (await redis.eval(fencedWriteLua, 2, ...keys, ...args)) as [number, string];
  }
}
