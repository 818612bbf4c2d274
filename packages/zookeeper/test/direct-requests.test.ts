import { startZooKeeper, type ServerHandle } from '@deadbolt/conformance/servers';
import zookeeper, { type Client, type Event } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DirectRequest,
  directConnection,
  directGetChildren,
  type LibraryConnection,
  takeDirectReply,
} from '../src/direct-requests.js';
import {
  CreateMode,
  createReturningZxid,
  getChildren,
  getDataAndStat,
  isNodeExists,
  isNoNode,
  mkdirp,
  remove,
  stat,
  watchData,
} from '../src/operations.js';
import { readWholeFrames } from '../src/whole-frames.js';
import { connectStringOf } from './support.js';

/**
 * direct-requests.ts against a real server: the hot requests it encodes itself share a session with
 * the library's own requests, and everything the library did with a reply (the zxid it reconnects
 * with, the watches it sets again, its Exceptions) still happens.
 */
let server: ServerHandle;
const clients: Client[] = [];
const base = `/direct-${Date.now()}`;
const soon = (): number => Date.now() + 5_000;

beforeAll(async () => {
  server = await startZooKeeper();
}, 120_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await server?.stop();
});

/** A client set up as the adapter's session sets up its own (frames read by readWholeFrames), connected. */
async function connected(): Promise<Client> {
  const client = zookeeper.createClient(connectStringOf(server.url), { sessionTimeout: 10_000, retries: 0 });
  readWholeFrames(client);
  clients.push(client);
  await new Promise<void>((resolve) => {
    client.once('connected', () => resolve());
    client.connect();
  });
  expect(directConnection(client), 'the hot requests go direct on a client whose frames we read').toBeDefined();
  return client;
}

/** The library's connection state that direct replies must keep up to date. */
function libraryZxid(client: Client): Buffer {
  return (client as unknown as { connectionManager: { zxid: Buffer } }).connectionManager.zxid;
}

describe('direct requests (create, delete, getChildren, getData with a watch)', () => {
  it("interleaved with the library's own requests on one session, each gets its own reply", async () => {
    const client = await connected();
    const parent = await mkdirp(client, `${base}/mixed`, soon());
    const states: string[] = [];
    client.on('state', (state) => states.push(String(state)));
    const rounds = await Promise.all(
      Array.from({ length: 25 }, async (_, index) => {
        const [created, parentStat, listing, parentData] = await Promise.all([
          createReturningZxid(client, `${parent}/n-${index}-`, Buffer.from(`data ${index}`), CreateMode.PERSISTENT_SEQUENTIAL, soon()),
          stat(client, parent, soon()), // the library's exists
          getChildren(client, parent, soon()), // direct
          getDataAndStat(client, parent, soon()), // the library's getData
        ]);
        return { index, created, parentStat, listing, parentData };
      }),
    );
    for (const { index, created, parentStat, listing, parentData } of rounds) {
      expect(created.path.startsWith(`${parent}/n-${index}-`)).toBe(true);
      // The create's czxid is the node's own, as a stat of it tells.
      const own = await stat(client, created.path, soon());
      expect(created.czxid?.equals(own?.czxid as Buffer)).toBe(true);
      expect(parentStat?.numChildren).toBeGreaterThanOrEqual(0);
      expect(parentData?.data.length).toBe(0);
      expect(listing.every((name) => name.startsWith('n-'))).toBe(true);
    }
    const names = await getChildren(client, parent, soon());
    expect(names.sort()).toEqual(rounds.map(({ created }) => created.path.slice(parent.length + 1)).sort());
    // No reply was matched to the wrong request: the library reconnects on one, and said nothing.
    expect(states).toEqual([]);
  });

  it('a direct reply moves on the zxid the library reconnects with (so it never resumes on a server behind what it saw)', async () => {
    const client = await connected();
    const parent = await mkdirp(client, `${base}/zxid`, soon());
    const created = await createReturningZxid(client, `${parent}/n-`, Buffer.alloc(0), CreateMode.EPHEMERAL_SEQUENTIAL, soon());
    expect(libraryZxid(client).equals(created.czxid as Buffer)).toBe(true);
    await remove(client, created.path, soon());
    expect(libraryZxid(client).readBigInt64BE(0)).toBeGreaterThan((created.czxid as Buffer).readBigInt64BE(0));
  });

  it("the server's errors come back as the library's Exceptions", async () => {
    const client = await connected();
    const parent = await mkdirp(client, `${base}/errors`, soon());
    await expect(remove(client, `${parent}/missing`, soon())).rejects.toSatisfy(isNoNode);
    await expect(createReturningZxid(client, `${parent}/missing/child`, Buffer.alloc(0), CreateMode.PERSISTENT, soon())).rejects.toSatisfy(
      isNoNode,
    );
    await createReturningZxid(client, `${parent}/twice`, Buffer.alloc(0), CreateMode.PERSISTENT, soon());
    await expect(createReturningZxid(client, `${parent}/twice`, Buffer.alloc(0), CreateMode.PERSISTENT, soon())).rejects.toSatisfy(
      isNodeExists,
    );
    await expect(getChildren(client, `${parent}/missing`, soon())).rejects.toSatisfy(isNoNode);
    await expect(watchData(client, `${parent}/missing`, () => undefined, soon())).rejects.toSatisfy(isNoNode);
  });

  it('names and data are UTF-8 on the wire, counted in bytes', async () => {
    const client = await connected();
    const parent = await mkdirp(client, `${base}/utf8`, soon());
    const name = 'ключ-ü-中文-';
    const data = Buffer.from('данные', 'utf8');
    const created = await createReturningZxid(client, `${parent}/${name}`, data, CreateMode.PERSISTENT_SEQUENTIAL, soon());
    expect(created.path.startsWith(`${parent}/${name}`)).toBe(true);
    expect(await getChildren(client, parent, soon())).toEqual([created.path.slice(parent.length + 1)]);
    expect((await getDataAndStat(client, created.path, soon()))?.data.equals(data)).toBe(true);
  });

  it('a watch set by a direct getData fires when the node goes, also after the connection was replaced', async () => {
    const client = await connected();
    const other = await connected();
    const parent = await mkdirp(client, `${base}/watch`, soon());
    const node = (await createReturningZxid(other, `${parent}/n-`, Buffer.alloc(0), CreateMode.PERSISTENT_SEQUENTIAL, soon())).path;
    let fired!: (event: Event) => void;
    const event = new Promise<Event>((resolve) => (fired = resolve));
    await watchData(client, node, (each) => fired(each), soon());
    // A new connection on the same session: the server's watches were the old connection's; the
    // library sends its own list again (SetWatches), which is where the direct getData put this one.
    const reconnected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
    (client as unknown as { connectionManager: { socket: { destroy(): void } } }).connectionManager.socket.destroy();
    await reconnected;
    await remove(other, node, soon());
    expect((await event).getName()).toBe('NODE_DELETED');
  });
});

describe('takeDirectReply, on a stand-in connection', () => {
  it('a reply that does not parse fails its request and replaces the connection, instead of throwing from the socket reader', () => {
    const pendingQueue: { request: unknown; callback: (error: unknown) => void }[] = [];
    let destroyed = 0;
    const connection = {
      state: 2, // CONNECTED
      zxid: Buffer.alloc(8),
      pendingQueue,
      socket: { destroy: () => void (destroyed += 1) },
      queue(request: DirectRequest, callback: (error: unknown) => void) {
        request.header.xid = 7;
        pendingQueue.push({ request, callback });
      },
      registerDataWatcher: () => undefined,
    } as unknown as LibraryConnection;
    let outcome: unknown;
    directGetChildren(connection, '/a', (error, children) => {
      outcome = error ?? children;
    });
    // The reply header for xid 7 (zxid 0, err 0), then a listing that says 5 children and ends there.
    const frame = Buffer.alloc(24);
    frame.writeInt32BE(20, 0);
    frame.writeInt32BE(7, 4);
    frame.writeInt32BE(5, 20);
    expect(takeDirectReply(connection, frame)).toBe(true);
    expect(String(outcome)).toMatch(/unreadable ZooKeeper reply/);
    expect(destroyed).toBe(1);
    expect(pendingQueue).toEqual([]);
  });
});
