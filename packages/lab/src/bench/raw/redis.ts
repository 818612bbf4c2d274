import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Mutex } from '../subject.js';

const compareAndDelete = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * The bare protocol every Redis lock builds on, with nothing around it: SET NX PX to take,
 * a Lua compare-and-delete to give back, and a 1 ms poll while busy. The baseline of the ratios.
 */
export async function openRawRedis(url: string, ttlMs: number): Promise<Mutex> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  const sha = (await redis.script('LOAD', compareAndDelete)) as string;
  return {
    async acquire(key) {
      const token = randomBytes(16).toString('hex');
      while ((await redis.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') await delay(1);
      return async () => {
        await redis.evalsha(sha, 1, key, token);
      };
    },
    async close() {
      redis.disconnect();
    },
  };
}

/**
 * The limit of a contended hand-off on one Redis, measured beside the locks: the "lock" is one token
 * in a list, taken with BLPOP and given back with LPUSH, so the server wakes exactly the longest
 * blocked client (FIFO) and a hand-off costs one push and one pop. No lease, no owner check, no
 * fencing: nothing a lock could do faster. Each worker opens its own connection, as with the locks.
 */
export async function openRawTokenHandoff(url: string, tokens = 1): Promise<Mutex> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  const seeded = new Set<string>();
  return {
    async acquire(key) {
      const list = `${key}:token`;
      if (!seeded.has(key)) {
        seeded.add(key);
        // The first worker on a key puts the tokens in (one per permit); the others find the marker.
        if ((await redis.set(`${key}:seeded`, '1', 'NX')) === 'OK') await redis.lpush(list, ...Array<string>(tokens).fill('token'));
      }
      await redis.blpop(list, 0);
      return async () => {
        await redis.lpush(list, 'token');
      };
    },
    async close() {
      redis.disconnect();
    },
  };
}
