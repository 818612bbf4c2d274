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
