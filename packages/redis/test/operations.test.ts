import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import '../src/index.js';

let server: ServerHandle;
const clients: LockClient[] = [];

beforeAll(async () => {
  server = await startRedis();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(() => server?.stop());

/** waiterLeaseMs 1500: a queued waiter heartbeats every 500 ms. */
function fairClient(): LockClient {
  const client = createLockClient({ url: `${server.url}?mode=fair&waiterLeaseMs=1500`, prefix: 'ops-fair:' });
  clients.push(client);
  return client;
}

describe('redis operator API, fair mode queues', () => {
  it('a mutex waiter queued behind a forced holder is granted (inspect counted it as waiting first)', async () => {
    const [holder, waiter, operator] = [fairClient(), fairClient(), fairClient()];
    await holder.acquire('queued', { ttlMs: 60_000 });
    const contended = new Promise<void>((resolve) => waiter.once('contended', () => resolve()));
    const waiting = waiter.acquire('queued', { waitMs: 20_000 });
    await contended;
    expect((await operator.inspect('queued')).waiters).toBe(1);
    expect(await operator.forceRelease('queued')).toBe(true);
    const granted = await waiting;
    expect(granted.held).toBe(true);
    await granted.release();
  });

  it('a permit waiter queued behind forced permits is granted', async () => {
    const [holder, waiter, operator] = [fairClient(), fairClient(), fairClient()];
    await holder.semaphore('permits', { permits: 1 }).acquire({ ttlMs: 60_000 });
    const contended = new Promise<void>((resolve) => waiter.once('contended', () => resolve()));
    const waiting = waiter.semaphore('permits', { permits: 1 }).acquire({ waitMs: 20_000 });
    await contended;
    expect(await operator.forceRelease('permits')).toBe(true);
    const granted = await waiting;
    expect(granted.held).toBe(true);
    await granted.release();
  });
});
