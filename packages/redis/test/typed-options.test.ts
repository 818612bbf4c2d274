import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import '../src/index.js';

// Type-level checks run in CI through the root tsconfig.test.json (`npm run typecheck`); the packed
// install test repeats the client case with ioredis 6.
describe('redis options are typed by scheme', () => {
  it("the application's own ioredis Redis and Cluster type-check as `client`; wrong types do not", async () => {
    const redis = new Redis({ lazyConnect: true });
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    try {
      await createLockClient({ url: 'redis://127.0.0.1:1', options: { client: redis } }).close();
      await createLockClient({ url: 'redis://127.0.0.1:1', options: { client: cluster } }).close();
      await createLockClient({ backend: 'redis', options: { mode: 'redlock', clients: [redis] } }).close();
      // @ts-expect-error commandTimeoutMs is a number of milliseconds
      expect(() => createLockClient({ url: 'rediss://h:1', options: { commandTimeoutMs: '2s' } })).toThrow(InvalidArgumentError);
      // @ts-expect-error not a mode
      expect(() => createLockClient({ url: 'redis://h:1', options: { mode: 'fast' } })).toThrow(/mode/);
    } finally {
      redis.disconnect();
      cluster.disconnect();
    }
  });
});
