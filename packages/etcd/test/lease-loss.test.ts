import { startEtcd, startProxy, type ServerHandle, type TcpProxy } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend } from '../src/index.js';
import { rawClient } from './support.js';

/**
 * The lease is kept alive on the local clock: when its keep-alives stop being answered, every hold
 * on it is reported lost before etcd expires the lease and can grant the key to anyone else.
 */
let server: ServerHandle;
let proxy: TcpProxy;
const clients: LockClient[] = [];

function client(url: string): LockClient {
  const made = createLockClient({ backend: createEtcdBackend(`${url}?sessionTtlMs=3000&callTimeoutMs=1000&dialTimeoutMs=1000`) });
  clients.push(made);
  return made;
}

beforeAll(async () => {
  server = await startEtcd();
  proxy = await startProxy(server.host, server.port);
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await proxy?.close();
  await server?.stop();
});

describe('lease loss', () => {
  it('a holder whose link goes silent is told its lock is lost before another client is granted it', async () => {
    const holder = client(proxy.rewrite(server.url));
    const lock = await holder.acquire('k');
    const lost = new Promise<number>((resolve) => lock.signal.addEventListener('abort', () => resolve(Date.now()), { once: true }));
    const lostEvent = new Promise<string>((resolve) => holder.once('lost', (event) => resolve(event.key)));
    proxy.strand();
    const other = client(server.url);
    const next = await other.acquire('k', { waitMs: 20_000 });
    const grantedAt = Date.now();
    const lostAt = await lost;
    expect(lostAt).toBeLessThanOrEqual(grantedAt);
    expect(await lostEvent).toBe('k');
    expect(lock.held).toBe(false);
    expect(next.fence).toBeGreaterThan(lock.fence!);
    await next.release();
  });

  it('a holder partitioned past its session TTL is told its lock is lost before another client is granted it', async () => {
    const partitioned = await startProxy(server.host, server.port);
    try {
      const holder = client(partitioned.rewrite(server.url));
      const lock = await holder.acquire('partitioned');
      const lost = new Promise<number>((resolve) => lock.signal.addEventListener('abort', () => resolve(Date.now()), { once: true }));
      // Bytes neither delivered nor refused, both ways: keep-alives go unanswered, nobody is told.
      partitioned.partition();
      const next = await client(server.url).acquire('partitioned', { waitMs: 20_000 });
      const grantedAt = Date.now();
      expect(await lost).toBeLessThanOrEqual(grantedAt);
      expect(lock.held).toBe(false);
      expect(next.fence).toBeGreaterThan(lock.fence!);
      await next.release();
    } finally {
      partitioned.heal();
      await partitioned.close();
    }
  });

  it('a lease revoked behind our back (as `etcdctl lease revoke` does) is reported lost at its next keep-alive answer', async () => {
    const holder = client(server.url);
    const lock = await holder.acquire('revoked');
    const lost = new Promise<void>((resolve) => lock.signal.addEventListener('abort', () => resolve(), { once: true }));
    const raw = rawClient(server.url);
    try {
      const [kv] = (await raw.getAll().prefix('revoked/').exec()).kvs;
      await raw.leaseClient.leaseRevoke({ ID: kv!.lease });
    } finally {
      raw.close();
    }
    // The keep-alive every TTL/3 (1 s here) is answered with TTL 0: lost well before the 3 s TTL.
    await lost;
    const reason = lock.signal.reason as Error & { cause?: Error };
    // Lost by etcd's answer (TTL 0), not by the local bound running out.
    expect(`${reason.message} ${reason.cause?.message ?? ''}`).toContain('expired or was revoked');
    expect(lock.held).toBe(false);
    await expect(lock.renew()).rejects.toMatchObject({ code: 'LOCK_LOST' });
    // A new lease serves the next hold.
    const again = await holder.acquire('revoked', { waitMs: 0 });
    await again.release();
  });
});
