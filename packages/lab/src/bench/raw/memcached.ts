import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import memjs from 'memjs';
import type { Mutex } from '../subject.js';

/**
 * The bare Memcached lock: `add` (stores only if the key is absent) with an expiry, a 1 ms poll
 * while busy, and a plain `delete` to give it back (no ownership check: the baseline is the least
 * any Memcached lock can do). Memcached expiries are whole seconds, at least 1.
 */
export async function openRawMemcached(url: string, ttlMs: number): Promise<Mutex> {
  const { host, port } = new URL(url);
  const client = memjs.Client.create(`${host}:${port}`, { retries: 0, timeout: 2, logger: { log: () => undefined } });
  const expires = Math.max(1, Math.ceil(ttlMs / 1000));
  await client.add(`bench-raw-connect:${randomBytes(4).toString('hex')}`, '1', { expires: 1 }); // connect outside the measurement
  return {
    async acquire(key) {
      const token = randomBytes(16).toString('hex');
      while (!(await client.add(key, token, { expires }))) await delay(1);
      return async () => {
        await client.delete(key);
      };
    },
    async close() {
      client.close();
    },
  };
}
