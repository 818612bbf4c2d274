import { startEtcd, startProxy, type ServerHandle, type TcpProxy } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend } from '../src/index.js';

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
});
