import { startEtcd, startProxy, type ServerHandle, type TcpProxy } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend } from '../src/index.js';
import { rawClient } from './support.js';

/**
 * A waiter's watch on its predecessor falls behind a compaction: its link is cut, the predecessor
 * goes and the history that held the delete event is compacted away, so when the watch comes back
 * etcd cancels it ("required revision has been compacted"). The waiter must read the queue again.
 */
let server: ServerHandle;
let proxy: TcpProxy;
const clients: LockClient[] = [];

function client(url: string): LockClient {
  const made = createLockClient({ backend: createEtcdBackend(`${url}?sessionTtlMs=10000&callTimeoutMs=2000&dialTimeoutMs=2000`) });
  clients.push(made);
  return made;
}

/** Watchers registered on the member now, from its Prometheus metrics. */
async function watchers(): Promise<number> {
  const text = await (await fetch(`http://${server.host}:${server.port}/metrics`)).text();
  const line = /^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(text);
  if (line === null) throw new Error('no etcd_debugging_mvcc_watcher_total in the metrics');
  return Number(line[1]);
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

describe('etcd: a watch behind a compaction', () => {
  it('the waiter reads the queue again after the watch error and gets the lock its predecessor released', async () => {
    const holder = client(server.url);
    const first = await holder.acquire('compacted');
    const before = await watchers();
    const waiter = client(proxy.rewrite(server.url));
    // Below the waiter's 5 s quiet re-read: only the watch error can send it back to the queue in time.
    const waiting = waiter.acquire('compacted', { waitMs: 4_800 });
    const deadline = Date.now() + 4_000;
    while ((await watchers()) <= before) {
      if (Date.now() > deadline) throw new Error('the waiter never watched its predecessor');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    proxy.cut();
    await first.release();
    const raw = rawClient(server.url);
    try {
      await raw.put('compaction-filler').value('x');
      const { header } = await raw.kv.range({ key: Buffer.from('compaction-filler') });
      await raw.kv.compact({ revision: header.revision, physical: true });
    } finally {
      raw.close();
    }
    proxy.heal();

    const next = await waiting;
    expect(next.held).toBe(true);
    expect(next.fence).toBeGreaterThan(first.fence!);
    expect(await next.validate()).toBe(true);
    await next.release();
  });
});
