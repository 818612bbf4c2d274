/**
 * The fenced register in Redis, as the `@deadbolt/fence` README has users write: every write is
 * fencedSet (one Lua script compares the fence and writes); readers GET the key as before.
 */
import { fencedSet, readFence } from '@deadbolt/fence/redis';
import { Redis } from 'ioredis';
import type { FenceCheckedRegister } from './fenced-store.js';

/** A dead or frozen data server is a harness error within this, never a hang. */
const commandTimeoutMs = 10_000;

export async function redisRegister(url: string, name: string): Promise<FenceCheckedRegister> {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    commandTimeout: commandTimeoutMs,
    connectTimeout: commandTimeoutMs,
  });
  redis.on('error', () => undefined); // surfaces on the next command instead
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  const key = `compare-register:${name}`;
  const read = async (): Promise<number> => {
    const value = await redis.get(key);
    return value === null ? 0 : Number(value);
  };
  return {
    read,
    async write(fence, value) {
      await fencedSet(redis, key, String(value), fence); // throws StaleFenceError for a stale fence
    },
    async final() {
      return { value: await read(), fence: await readFence(redis, key) };
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
