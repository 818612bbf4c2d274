import { startZooKeeper, type ServerHandle } from '@deadbolt/conformance/servers';
import zookeeper, { type Client } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperBackend } from '../src/index.js';
import { CreateMode, createReturningZxid, getChildren, mkdirp, remove, stat } from '../src/operations.js';
import { readWholeFrames } from '../src/whole-frames.js';
import { wrapXids } from '../src/xid-wrap.js';
import { connectStringOf, request } from './support.js';

let server: ServerHandle;
let client: Client | undefined;
const soon = (): number => Date.now() + 5_000;

beforeAll(async () => {
  server = await startZooKeeper();
}, 120_000);

afterAll(async () => {
  client?.close();
  await server?.stop();
});

describe('wrapXids', () => {
  it('a session carries on past 2^31 requests: xids start again from 1, as the Java client numbers them', async () => {
    const session = zookeeper.createClient(connectStringOf(server.url), { sessionTimeout: 10_000, retries: 0 });
    client = session;
    readWholeFrames(session);
    wrapXids(session);
    await new Promise<void>((resolve) => {
      session.once('connected', () => resolve());
      session.connect();
    });
    const parent = await mkdirp(session, `/xid-${Date.now()}`, soon());
    const manager = (session as unknown as { connectionManager: { xid: number } }).connectionManager;
    // As if 2^31 - 4 requests had been sent on this client.
    manager.xid = 0x7fffffff - 3;
    // Direct requests and the library's own, in flight together across the wrap.
    const created = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        Promise.all([
          createReturningZxid(session, `${parent}/n-${index}-`, Buffer.alloc(0), CreateMode.EPHEMERAL_SEQUENTIAL, soon()),
          stat(session, parent, soon()),
        ]),
      ),
    );
    expect(manager.xid).toBeLessThan(100);
    expect((await getChildren(session, parent, soon())).length).toBe(8);
    for (const [node] of created) await remove(session, node.path, soon());
    expect(await getChildren(session, parent, soon())).toEqual([]);
  });

  it("the backend's session numbers its requests that way", async () => {
    const backend = createZooKeeperBackend(`${server.url}/xid-backend-${Date.now()}`);
    try {
      const first = await backend.acquire(request('wrap'), soon(), new AbortController().signal);
      if (first === undefined) throw new Error('no grant on a free key');
      await backend.release(first);
      const session = (backend as unknown as { site: { session: { connectedClient: Client } } }).site.session.connectedClient;
      const manager = (session as unknown as { connectionManager: { xid: number } }).connectionManager;
      manager.xid = 0x7fffffff - 3;
      for (let round = 0; round < 5; round += 1) {
        const grant = await backend.acquire(request('wrap'), soon(), new AbortController().signal);
        if (grant === undefined) throw new Error('no grant on a free key');
        expect(await backend.release(grant)).toBe(true);
      }
      expect(manager.xid).toBeLessThan(100);
    } finally {
      await backend.close();
    }
  });
});
