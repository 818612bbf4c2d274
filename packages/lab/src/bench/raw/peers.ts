import { Redis } from 'ioredis';
import Redlock from 'redlock';
import { Semaphore as PeerSemaphore, Mutex as SemaphoreMutex } from 'redis-semaphore';
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

/**
 * redis-semaphore's Semaphore of `limit` with its default settings (a zset of client-clock
 * timestamps, polled every retryInterval = 10 ms), except acquireTimeout: 60 s like Deadbolt's
 * waitMs here, so a worker that loses the polling race keeps trying instead of failing at 10 s.
 */
export async function openRedisSemaphorePermits(url: string, ttlMs: number, limit: number): Promise<Mutex> {
  const redis = new Redis(url, { lazyConnect: true });
  await redis.connect();
  return {
    async acquire(key) {
      const semaphore = new PeerSemaphore(redis, key, limit, { lockTimeout: ttlMs, acquireTimeout: 60_000 });
      await semaphore.acquire();
      return async () => {
        await semaphore.release();
      };
    },
    async close() {
      redis.disconnect();
    },
  };
}
