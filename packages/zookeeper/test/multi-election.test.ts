import { randomUUID } from 'node:crypto';
import { startProxy, startZooKeeper, type ServerHandle, type TcpProxy } from '@deadbolt/conformance/servers';
import { createLockClient, type Election, type LockClient, type Term } from '@deadbolt/core';
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperBackend } from '../src/index.js';
import { children, connectStringOf, rawClient, removeNode, stat, killSession } from './support.js';

let server: ServerHandle;
let raw: Awaited<ReturnType<typeof rawClient>>;
const base = `/deadbolt/multi-election-${randomUUID().slice(0, 8)}`;
const clients: LockClient[] = [];
const proxies: TcpProxy[] = [];
const query = 'sessionTimeoutMs=4000&connectTimeoutMs=2000&operationTimeoutMs=2000';

function client(): LockClient {
  const created = createLockClient(`${server.url}${base}?${query}`);
  clients.push(created);
  return created;
}

function zxidOf(buffer: Buffer): number {
  return Number(buffer.readBigInt64BE(0));
}

function dataOf(from: Client, path: string): Promise<string> {
  return new Promise((resolve, reject) =>
    from.getData(path, (error, data) => (error ? reject(error) : resolve(data?.toString('utf8') ?? ''))),
  );
}

/** A node as a Curator process would create it (protected, sequential, ephemeral). */
function createRaw(from: Client, prefix: string, data: string): Promise<string> {
  return new Promise((resolve, reject) =>
    from.mkdirp(prefix.slice(0, prefix.lastIndexOf('/')), (mkdirError) => {
      if (mkdirError) return reject(mkdirError);
      from.create(prefix, Buffer.from(data, 'utf8'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, (error, created) =>
        error ? reject(error) : resolve(created),
      );
    }),
  );
}

function contended(of: LockClient): Promise<void> {
  return new Promise((resolve) => of.once('contended', () => resolve()));
}

async function firstTerm(election: Election): Promise<{ term: Term; iterator: AsyncIterator<Term> }> {
  const iterator = election[Symbol.asyncIterator]();
  const next = await iterator.next();
  if (next.done === true) throw new Error('no term');
  return { term: next.value, iterator };
}

const protectedNode = (name: string) => new RegExp(`^_c_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-${name}(\\d{10})$`);

beforeAll(async () => {
  server = await startZooKeeper();
  raw = await rawClient(connectStringOf(server.url));
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((each) => each.close()));
});
afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
  await raw?.dispose();
  await server?.stop();
});

describe('zookeeper acquireAll: one multi enqueues under every path', () => {
  it('Curator mutex nodes (`_c_<uuid>-lock-<seq>`, data = owner) under each path, one guid, one czxid, released together', async () => {
    const all = await client().acquireAll(['acct:2', 'acct:1']);
    const nodes = await Promise.all(['acct:1', 'acct:2'].map(async (key) => ({ key, names: await children(raw, `${base}/${key}`) })));
    const guids = nodes.map(({ names }) => {
      expect(names).toHaveLength(1);
      const match = protectedNode('lock-').exec(names[0]!);
      expect(match).not.toBeNull();
      return match![1];
    });
    expect(guids[0]).toBe(guids[1]);
    const stats = await Promise.all(nodes.map(({ key, names }) => stat(raw, `${base}/${key}/${names[0]}`)));
    expect(zxidOf(stats[0]!.czxid)).toBe(zxidOf(stats[1]!.czxid)); // one transaction
    expect(all.fences.get('acct:1')).toBe(zxidOf(stats[0]!.czxid));
    expect(await dataOf(raw, `${base}/acct:1/${nodes[0]!.names[0]}`)).toBe(all.owner);
    await all.release();
    for (const key of ['acct:1', 'acct:2']) expect(await children(raw, `${base}/${key}`)).toEqual([]);
  });

  it('a waiting acquireAll is queued under every path at once and holds the free keys while it waits', async () => {
    const [holder, multi, other] = [client(), client(), client()];
    const busy = await holder.acquire('q:2');
    const queued = contended(multi);
    const pending = multi.acquireAll(['q:1', 'q:2'], { waitMs: 10_000 });
    await queued;
    expect(await children(raw, `${base}/q:1`)).toHaveLength(1);
    expect(await children(raw, `${base}/q:2`)).toHaveLength(2);
    expect(await other.tryAcquire('q:1')).toBeNull();
    await busy.release();
    const all = await pending;
    expect(all.keys).toEqual(['q:1', 'q:2']);
    await all.release();
  });

  it('an acquireAll with no wait on first-time keys (no parents yet) makes the parents and takes them', async () => {
    const fresh = randomUUID().slice(0, 8);
    const keys = [`fresh-${fresh}:1`, `fresh-${fresh}:2`];
    const all = await client().acquireAll(keys, { waitMs: 0 });
    expect(all.keys).toEqual(keys);
    await all.release();
  });
});

describe('zookeeper election: Curator LeaderLatch and LeaderSelector layouts', () => {
  it('LeaderLatch: `_c_<uuid>-latch-<seq>`, data = participant id, term = czxid; leader() reads it', async () => {
    const election = client().elect('sched', { id: 'node-a' });
    const { term } = await firstTerm(election);
    const names = await children(raw, `${base}/sched`);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(protectedNode('latch-'));
    expect(await dataOf(raw, `${base}/sched/${names[0]}`)).toBe('node-a');
    expect(term.term).toBe(zxidOf((await stat(raw, `${base}/sched/${names[0]}`))!.czxid));
    expect(await election.leader()).toBe('node-a');
    await election.resign();
    expect(await children(raw, `${base}/sched`)).toEqual([]);
  });

  it('a Curator LeaderLatch participant that joined first leads; ours takes over when its node goes', async () => {
    const javaNode = await createRaw(raw, `${base}/interop/_c_${randomUUID()}-latch-`, 'java-1');
    const ours = client();
    const election = ours.elect('interop', { id: 'node-b' });
    expect(await election.leader()).toBe('java-1');
    const queued = contended(ours);
    const iterator = election[Symbol.asyncIterator]();
    const next = iterator.next();
    await queued;
    await removeNode(raw, javaNode);
    const won = await next;
    expect(won.done).not.toBe(true);
    expect(await election.leader()).toBe('node-b');
    await election.resign();
  });

  it('LeaderSelector: `_c_<uuid>-lock-<seq>` with data = id, the mutex on the path', async () => {
    const election = client().elect('selected', { id: 'node-c', layout: 'selector' });
    await firstTerm(election);
    const names = await children(raw, `${base}/selected`);
    expect(names[0]).toMatch(protectedNode('lock-'));
    expect(await dataOf(raw, `${base}/selected/${names[0]}`)).toBe('node-c');
    expect(await client().tryAcquire('selected')).toBeNull();
    expect(await election.leader()).toBe('node-c');
    await election.resign();
  });

  it('a leader whose session is killed loses its term (signal, lost) and the follower takes over with a higher term', async () => {
    const proxy = await startProxy(server.host, server.port);
    proxies.push(proxy);
    const backend = createZooKeeperBackend(`zookeeper://127.0.0.1:${proxy.port}${base}?${query}`);
    const victim = createLockClient({ backend });
    clients.push(victim);
    const lost = new Promise<void>((resolve) => victim.once('lost', () => resolve()));
    const { term: first } = await firstTerm(victim.elect('killed', { id: 'a' }));
    const follower = client();
    const queued = contended(follower);
    const next = follower.elect('killed', { id: 'b' })[Symbol.asyncIterator]().next();
    await queued;
    await killSession(backend, proxy, server.url);
    const second = await next;
    await lost;
    expect(first.signal.aborted).toBe(true);
    expect(second.done).not.toBe(true);
    expect(second.value!.term).toBeGreaterThan(first.term);
  });
});
