import { createLockClient } from '@deadbolt/core';
import type { Mutex } from './subject.js';

/** Deadbolt as a benchmark subject: one client per worker, an explicit ttl, no auto-renew. */
export async function openDeadbolt(url: string, ttlMs: number): Promise<Mutex> {
  const client = createLockClient({ url, prefix: '' });
  await client.capabilities(); // load the adapter outside the measurement
  return {
    async acquire(key) {
      const lock = await client.acquire(key, { ttlMs, waitMs: 60_000 });
      return () => lock.release();
    },
    close: () => client.close(),
  };
}

/** A Deadbolt semaphore of `permits` as a subject: each acquire takes one permit. */
export async function openDeadboltSemaphore(url: string, ttlMs: number, permits: number): Promise<Mutex> {
  const client = createLockClient({ url, prefix: '' });
  await client.capabilities();
  return {
    async acquire(key) {
      const permit = await client.semaphore(key, { permits }).acquire({ ttlMs, waitMs: 60_000 });
      return () => permit.release();
    },
    close: () => client.close(),
  };
}

/** A Deadbolt read-write lock as a subject: each acquire reads with probability `readShare`, else writes. */
export async function openDeadboltReadWrite(url: string, ttlMs: number, readShare: number): Promise<Mutex> {
  const client = createLockClient({ url, prefix: '' });
  await client.capabilities();
  return {
    async acquire(key) {
      const side = Math.random() < readShare ? 'read' : 'write';
      const lock = await client.readWriteLock(key)[side].acquire({ ttlMs, waitMs: 60_000 });
      return () => lock.release();
    },
    close: () => client.close(),
  };
}
