import { startZooKeeper, zooKeeperSrvr, type ServerHandle } from '@deadbolt/conformance/servers';
import type { Grant } from '@deadbolt/core/adapter';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperBackend, type ZooKeeperBackend } from '../src/index.js';
import { connectStringOf, rawClient, removeNode, request } from './support.js';

let server: ServerHandle;
let backend: ZooKeeperBackend;
let raw: Awaited<ReturnType<typeof rawClient>>;

/** The server's count of packets received (`srvr`), to see how many requests a renewal batch cost. */
async function packetsReceived(): Promise<number> {
  const report = await zooKeeperSrvr(server.host, server.port, 2_000);
  const received = report && /^Received: (\d+)/m.exec(report)?.[1];
  if (!received) throw new Error(`no "Received:" line in srvr's report: ${report}`);
  return Number(received);
}

/** The server's last zxid (`srvr`): every write, including a create refused with NO_NODE or NODE_EXISTS, takes one. */
async function lastZxid(): Promise<bigint> {
  const report = await zooKeeperSrvr(server.host, server.port, 2_000);
  const zxid = report && /^Zxid: (0x[0-9a-f]+)/m.exec(report)?.[1];
  if (!zxid) throw new Error(`no "Zxid:" line in srvr's report: ${report}`);
  return BigInt(zxid);
}

beforeAll(async () => {
  server = await startZooKeeper();
  backend = createZooKeeperBackend(`${server.url}/deadbolt/renew-many?sessionTimeoutMs=10000&operationTimeoutMs=5000`);
  raw = await rawClient(connectStringOf(server.url));
});
afterAll(async () => {
  await backend?.close();
  await raw?.dispose();
  await server?.stop();
});

describe('zookeeper renewMany (auto-renew of many session-leased locks)', () => {
  it('checks 1,200 locks in a few multi requests and reports exactly the ones whose node is gone', async () => {
    const grants: Grant[] = [];
    for (let i = 0; i < 1200; i++) {
      const result = await backend.tryAcquire(request(`lock-${i}`));
      if (!result.acquired) throw new Error(`lock-${i} was busy`);
      grants.push(result.grant);
    }
    // Gone: one in the first chunk of 500, two in the second (so the check resumes after a failure), the very last.
    const gone = new Set([3, 700, 701, 1199]);
    for (const index of gone) await removeNode(raw, grants[index]!.token);

    const before = await packetsReceived();
    const renewed = await backend.renewMany(grants);
    const after = await packetsReceived();

    console.log(`[zookeeper] renewMany of ${grants.length} locks: ${after - before} packets received by the server`);
    expect(renewed).toEqual(grants.map((_, index) => !gone.has(index)));
    // 3 chunks + 1 resumption per loss (4) + pings of two sessions: far below one request per lock (1,200).
    expect(after - before).toBeLessThanOrEqual(12);
  }, 120_000);
});

describe('zookeeper first use of a key', () => {
  it('makes the lock parent with one create when the base path exists (not a create per path segment)', async () => {
    // The base path exists once any key was used.
    const first = await backend.tryAcquire(request('first-use-warm'));
    if (!first.acquired) throw new Error('first-use-warm was busy');
    const before = await lastZxid();
    const fresh = await backend.tryAcquire(request('first-use-fresh'));
    const after = await lastZxid();
    expect(fresh.acquired).toBe(true);
    // Our create (NO_NODE: no parent yet), the parent's create, our create again. node-zookeeper-client's
    // mkdirp created every segment of /deadbolt/renew-many/<key> from the root, one round trip after
    // another (5 writes): each round trip waited behind all the session had sent, and 500 first-time
    // keys at once on a loaded ensemble made a listing behind them outlast its deadline (CI).
    expect(after - before).toBe(3n);
    if (fresh.acquired) await backend.release(fresh.grant);
    await backend.release(first.grant);
  });
});
