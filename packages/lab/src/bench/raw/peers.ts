import { Redis } from 'ioredis';
import Redlock from 'redlock';
import { Mutex as SemaphoreMutex } from 'redis-semaphore';
import type { Mutex } from '../subject.js';

/** node-redlock v5 with its default settings (retryCount 10, retryDelay 200 ms, jitter 200 ms). */
export async function openNodeRedlock(url: string, ttlMs: number): Promise<Mutex> {
  const redis = new Redis(url, { lazyConnect: true });
  await redis.connect();
  const redlock = new Redlock([redis]);
  redlock.on('error', () => undefined); // contention reports ResourceLockedError events; counted as failures instead
  return {
    async acquire(key) {
      const lock = await redlock.acquire([key], ttlMs);
      return async () => {
        await lock.release();
      };
    },
    async close() {
      redis.disconnect();
    },
  };
}

/** redis-semaphore's Mutex with its default settings (retryInterval 10 ms, refresh at 80% of the lock timeout). */
export async function openRedisSemaphore(url: string, ttlMs: number): Promise<Mutex> {
  const redis = new Redis(url, { lazyConnect: true });
  await redis.connect();
  return {
    async acquire(key) {
      const mutex = new SemaphoreMutex(redis, key, { lockTimeout: ttlMs });
      await mutex.acquire();
      return async () => {
        await mutex.release();
      };
    },
    async close() {
      redis.disconnect();
    },
  };
}
