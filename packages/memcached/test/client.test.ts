import { BackendUnavailableError, createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../src/index.js';
import { startMemcached, type ServerHandle } from './support.js';

function tcpSockets(): number {
  return process.getActiveResourcesInfo().filter((name) => name === 'TCPSocketWrap').length;
}

describe('memcached through createLockClient', () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startMemcached();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('acquire, contend, hand off by polling, release; close leaves no sockets', async () => {
    const before = tcpSockets();
    const one = createLockClient({ url: `${server.url}?timeoutMs=2000` });
    const two = createLockClient({ url: server.url });
    try {
      const held = await one.acquire('client:handoff', { ttlMs: 10_000 });
      expect(await two.tryAcquire('client:handoff', { ttlMs: 10_000 })).toBeNull();
      const waiting = two.acquire('client:handoff', { ttlMs: 10_000, waitMs: 10_000 });
      const releasedAt = await new Promise<number>((resolve) => {
        setTimeout(() => void held.release().then(() => resolve(Date.now())), 50);
      });
      const next = await waiting;
      const handoffMs = Date.now() - releasedAt;
      console.info(`memcached hand-off latency (polling): ${handoffMs} ms`);
      expect(handoffMs).toBeLessThan(5_000);
      await next.release();
    } finally {
      await one.close();
      await two.close();
    }
    await expect.poll(() => tcpSockets(), { timeout: 5_000 }).toBeLessThanOrEqual(before);
  });

  it('ttl below 1000 ms is rejected before I/O (minTtlMs)', async () => {
    const client = createLockClient({ url: server.url });
    try {
      await expect(client.tryAcquire('client:short', { ttlMs: 500 })).rejects.toBeInstanceOf(InvalidArgumentError);
    } finally {
      await client.close();
    }
  });

  it('unknown URL parameter: InvalidArgumentError at createLockClient', () => {
    expect(() => createLockClient({ url: `${server.url}?bogus=1` })).toThrow(InvalidArgumentError);
  });

  it('a server that is not there: BackendUnavailableError within the deadline', async () => {
    const client = createLockClient({ url: 'memcached://127.0.0.1:1?timeoutMs=500' });
    const started = Date.now();
    try {
      await expect(client.tryAcquire('client:nowhere')).rejects.toBeInstanceOf(BackendUnavailableError);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await client.close();
    }
  });
});
