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
