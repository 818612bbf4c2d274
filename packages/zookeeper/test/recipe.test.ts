import { firstTrueWhileCalling, takesFreshKey } from '@deadbolt/conformance';
import { exchange, startProxy, startZooKeeper, type ServerHandle, type TcpProxy } from '@deadbolt/conformance/servers';
import { BackendUnavailableError, createLockClient } from '@deadbolt/core';
import { type Grant } from '@deadbolt/core/adapter';
import { createRequire } from 'node:module';
import zookeeper from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectRequest } from '../src/direct-requests.js';
import { createZooKeeperBackend, type ZooKeeperBackend } from '../src/index.js';
import { children, connectStringOf, counter, createNode, exists, rawClient, removeNode, request, stat, killSession } from './support.js';

let server: ServerHandle;
let raw: Awaited<ReturnType<typeof rawClient>>;
const base = '/deadbolt/recipe-test';
const backends: ZooKeeperBackend[] = [];
const proxies: TcpProxy[] = [];

function backend(hooks?: Parameters<typeof createZooKeeperBackend>[1]): ZooKeeperBackend {
  // parentCleanupDelayMs=0: these cases check that an emptied parent is gone right after the release.
  const created = createZooKeeperBackend(
    `${server.url}${base}?sessionTimeoutMs=4000&connectTimeoutMs=2000&operationTimeoutMs=2000&parentCleanupDelayMs=0`,
    hooks,
  );
  backends.push(created);
  return created;
}

async function grantOf(from: ZooKeeperBackend, key: string, owner = 'owner-1'): Promise<Grant> {
  const result = await from.tryAcquire(request(key, owner));
  if (!result.acquired) throw new Error(`expected to acquire ${key}`);
  return result.grant;
}

beforeAll(async () => {
  server = await startZooKeeper();
  raw = await rawClient(connectStringOf(server.url));
});
afterAll(async () => {
  for (const each of backends) await each.close();
  for (const each of proxies) await each.close();
  await raw?.dispose();
  await server?.stop();
});

describe('zookeeper lock recipe (standalone server)', () => {
  it("names nodes exactly as Curator's protected InterProcessMutex: <base>/<key>/_c_<uuid>-lock-NNNNNNNNNN", async () => {
    const grant = await grantOf(backend(), 'naming');
    expect(grant.token).toMatch(
      new RegExp(`^${base}/naming/_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\\d{10}$`),
    );
    expect(await children(raw, `${base}/naming`)).toEqual([grant.token.slice(grant.token.lastIndexOf('/') + 1)]);
    await backends.at(-1)!.release(grant);
  });

  it('a key with "/" is one encoded node, not a nested path', async () => {
    const grant = await grantOf(backend(), 'orders/42');
    expect(grant.token.startsWith(`${base}/orders%2F42/_c_`)).toBe(true);
    await backends.at(-1)!.release(grant);
  });

  it('excludes a Curator-style contender on the same path, and vice versa', async () => {
    const ours = backend();
    // What Curator's InterProcessMutex creates (protection mode): an ephemeral sequential `_c_<uuid>-lock-`.
    const curatorNode = await createNode(
      raw,
      `${base}/interop/_c_6f1c1d2e-0000-4000-8000-000000000000-lock-`,
      zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
    );
    expect((await ours.tryAcquire(request('interop'))).acquired).toBe(false);
    // tryAcquire's busy answer removed our node again: only Curator's is left.
    expect(await children(raw, `${base}/interop`)).toEqual([curatorNode.slice(curatorNode.lastIndexOf('/') + 1)]);
    const waiting = ours.acquire(request('interop'), Date.now() + 20_000, new AbortController().signal);
    await removeNode(raw, curatorNode);
    const grant = await waiting;
    expect(grant).toBeDefined();
    // Now a plain `lock-` node (Curator without protection) sorts after ours: not first.
    const second = await createNode(raw, `${base}/interop/lock-`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
    const names = (await children(raw, `${base}/interop`)).sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)));
    expect(names[0]).toBe(grant!.token.slice(grant!.token.lastIndexOf('/') + 1));
    await removeNode(raw, second);
    expect(await ours.release(grant!)).toBe(true);
  });

  it('an uncontended acquire sends its listing right behind its create, before the create is answered (one round trip)', async () => {
    // The default parent cleanup delay: the parent outlives the first release, as for a key used in a loop.
    const looping = createZooKeeperBackend(`${server.url}${base}?operationTimeoutMs=2000`);
    backends.push(looping);
    await looping.release(await grantOf(looping, 'pipelined')); // connects and makes the parent
    const manager = createRequire(import.meta.url)('node-zookeeper-client/lib/ConnectionManager.js') as {
      prototype: { queue(request: { header?: { type?: number } }, callback?: (...args: unknown[]) => void): void };
    };
    const original = manager.prototype.queue;
    const events: string[] = [];
    const watched = new Set([1, 8, 2]); // create, getChildren, delete (not a heartbeat's exists)
    manager.prototype.queue = function (this: unknown, sent, callback) {
      const type = sent.header?.type ?? -1;
      if (watched.has(type)) {
        events.push(`send ${type}`);
        // These are direct requests (direct-requests.ts): their replies come to `answer`, not to the library's callback.
        if (sent instanceof DirectRequest) {
          const answer = sent.answer;
          Object.assign(sent, {
            answer: (...args: Parameters<DirectRequest['answer']>) => {
              events.push(`reply ${type}`);
              answer(...args);
            },
          });
        }
      }
      return original.call(this, sent, callback);
    };
    try {
      await looping.release(await grantOf(looping, 'pipelined'));
    } finally {
      manager.prototype.queue = original;
    }
    expect(events).toEqual(['send 1', 'send 8', 'reply 1', 'reply 8', 'send 2', 'reply 2']);
  });

  it('10 waiters queue in order; each watches only its predecessor; each release triggers exactly one re-check', async () => {
    const holderBackend = backend();
    const watched = new Map<string, string>();
    let rechecks = 0;
    let nextWatch = counter(1);
    const waiterBackend = backend({
      onWatch: (_path, ours, predecessor) => {
        watched.set(ours, predecessor);
        nextWatch.hit();
      },
      onRecheck: () => (rechecks += 1),
    });
    const holder = await grantOf(holderBackend, 'herd', 'holder');
    const waits: Promise<Grant | undefined>[] = [];
    const order: number[] = [];
    for (let index = 0; index < 10; index += 1) {
      nextWatch = counter(1);
      const waiting = waiterBackend.acquire(request('herd', `waiter-${index}`), Date.now() + 60_000, new AbortController().signal);
      waits.push(waiting);
      await nextWatch.done; // queued (its node exists and it watches its predecessor) before the next one starts
    }
    // Every waiter watches a different node, and that node is the one just below its own.
    const nodes = (await children(raw, `${base}/herd`)).sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)));
    expect(nodes).toHaveLength(11);
    for (let index = 1; index < nodes.length; index += 1)
      expect(watched.get(`${base}/herd/${nodes[index]}`)).toBe(`${base}/herd/${nodes[index - 1]}`);
    expect(new Set(watched.values()).size).toBe(10);
    // The server agrees: 10 watches on 10 different paths (a herd would be 10 watches on 1 path).
    const wchs = await exchange(server.host, server.port, 'wchs', () => false, 2_000);
    const summary = typeof wchs === 'object' ? wchs.toString('utf8') : '';
    expect(summary).toMatch(/watching 10 paths/);
    expect(summary).toMatch(/Total watches:10\b/);

    let current: Grant = holder;
    let releaser: ZooKeeperBackend = holderBackend;
    for (let index = 0; index < 10; index += 1) {
      const before = rechecks;
      await releaser.release(current);
      const next = (await waits[index])!;
      order.push(index);
      expect(next.owner).toBe(`waiter-${index}`);
      // One release, one re-check: only the successor was woken (no herd).
      expect(rechecks - before).toBe(1);
      current = next;
      releaser = waiterBackend;
    }
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await waiterBackend.release(current);
    expect(await exists(raw, `${base}/herd`)).toBe(false); // the empty parent was cleaned up
  });

  it('by default an emptied parent outlives the release (a key used in a loop keeps it) and goes at close()', async () => {
    const looping = createZooKeeperBackend(`${server.url}${base}`);
    const first = await grantOf(looping, 'sweep');
    const parentBefore = await stat(raw, `${base}/sweep`);
    await looping.release(first);
    const second = await grantOf(looping, 'sweep');
    // Same czxid: the parent was not deleted and re-created between the two cycles.
    expect((await stat(raw, `${base}/sweep`))?.czxid).toEqual(parentBefore?.czxid);
    expect(second.fence).toBeGreaterThan(first.fence!);
    await looping.release(second);
    expect(await exists(raw, `${base}/sweep`)).toBe(true);
    await looping.close();
    expect(await exists(raw, `${base}/sweep`)).toBe(false);
  });

  it('timeout and abort delete our node: nothing left behind', async () => {
    const holderBackend = backend();
    const waiterBackend = backend();
    const holder = await grantOf(holderBackend, 'give-up');
    const startedAt = Date.now();
    expect(await waiterBackend.acquire(request('give-up', 'w1'), Date.now() + 300, new AbortController().signal)).toBeUndefined();
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(290);
    const abort = new AbortController();
    const watching = counter(1);
    const aborting = createZooKeeperBackend(`${server.url}${base}`, { onWatch: () => watching.hit() });
    backends.push(aborting);
    const waiting = aborting.acquire(request('give-up', 'w2'), Date.now() + 60_000, abort.signal);
    await watching.done;
    abort.abort();
    expect(await waiting).toBeUndefined();
    expect(await children(raw, `${base}/give-up`)).toEqual([holder.token.slice(holder.token.lastIndexOf('/') + 1)]);
    await holderBackend.release(holder);
    expect(await exists(raw, `${base}/give-up`)).toBe(false);
  });

  it('fence is the czxid and grows with every new holder; renew checks the node; release never deletes another node', async () => {
    const one = backend();
    const first = await grantOf(one, 'fence');
    expect(await one.renew(first)).toBe(true);
    expect(await one.release(first)).toBe(true);
    const second = await grantOf(one, 'fence');
    expect(second.fence).toBeGreaterThan(first.fence!);
    expect(await one.release(first)).toBe(false); // the old node is gone; the new one is untouched
    expect(await exists(raw, second.token)).toBe(true);
    await removeNode(raw, second.token); // someone removed our node: renew reports it
    expect(await one.renew(second)).toBe(false);
  });

  it("fence = the node's czxid (read from the create's reply, no stat), also with other sessions' writes interleaved and for waiters", async () => {
    const zxidOf = (buffer: Buffer): number => Number(buffer.readBigInt64BE(0));
    const queued = counter(1);
    const clients = [backend(), backend({ onWatch: () => queued.hit() }), backend(), backend()];
    // 4 sessions x 5 keys at once: the server applies other writes between ours.
    const grants = await Promise.all(
      clients.flatMap((each, index) => Array.from({ length: 5 }, (_, key) => grantOf(each, `czxid-${key}-${index}`, `o${index}`))),
    );
    for (const grant of grants) expect(grant.fence).toBe(zxidOf((await stat(raw, grant.token))!.czxid));
    await Promise.all(grants.map((grant, index) => clients[Math.floor(index / 5)]!.release(grant)));
    // A waiter's fence, granted after the watch fires, is its own node's czxid too.
    const held = await grantOf(clients[0]!, 'czxid-wait');
    const waiting = clients[1]!.acquire(request('czxid-wait', 'o1'), Date.now() + 10_000, new AbortController().signal);
    await queued.done; // it watches the holder's node
    await clients[0]!.release(held);
    const next = (await waiting)!;
    expect(next.fence).toBe(zxidOf((await stat(raw, next.token))!.czxid));
    expect(next.fence).toBeGreaterThan(held.fence!);
    await clients[1]!.release(next);
  });

  it('through createLockClient: waiters are served in order and the hand-off is fast', async () => {
    const url = `${server.url}${base}?sessionTimeoutMs=4000`;
    const queued = counter(1);
    const a = createLockClient({ url });
    const b = createLockClient({ backend: createZooKeeperBackend(url, { onWatch: () => queued.hit() }) });
    try {
      const held = await a.acquire('client-path');
      const waiting = b.acquire('client-path', { waitMs: 20_000 });
      // b is queued once its node exists next to a's.
      await queued.done;
      expect(await children(raw, `${base}/client-path`)).toHaveLength(2);
      const releasedAt = Date.now();
      await held.release();
      const next = await waiting;
      const handoffMs = Date.now() - releasedAt;
      console.log(`[zookeeper] hand-off latency ${handoffMs} ms`);
      expect(next.fence).toBeGreaterThan(held.fence!);
      await next.release();
    } finally {
      await a.close();
      await b.close();
    }
  });
});

/** A backend whose connection goes through a proxy (to be cut by killSession). */
async function proxiedBackend(
  hooks?: Parameters<typeof createZooKeeperBackend>[1],
): Promise<{ backend: ZooKeeperBackend; proxy: TcpProxy }> {
  const proxy = await startProxy(server.host, server.port);
  proxies.push(proxy);
  const created = createZooKeeperBackend(
    `zookeeper://127.0.0.1:${proxy.port}${base}?sessionTimeoutMs=4000&connectTimeoutMs=2000&operationTimeoutMs=2000`,
    hooks,
  );
  backends.push(created);
  return { backend: created, proxy };
}

describe('zookeeper release while disconnected (guaranteed delete, as Curator)', () => {
  it('a release that cannot reach the server deletes the node once the session reconnects, not only when it expires', async () => {
    const { backend: holderBackend, proxy } = await proxiedBackend();
    const released = await grantOf(holderBackend, 'guaranteed', 'holder');
    const kept = await grantOf(holderBackend, 'guaranteed-kept', 'holder');
    const waiterBackend = backend();
    const waiting = waiterBackend.acquire(request('guaranteed', 'waiter'), Date.now() + 20_000, new AbortController().signal);
    proxy.cut();
    await expect(holderBackend.release(released)).rejects.toBeInstanceOf(BackendUnavailableError);
    proxy.heal(); // within the 4 s session timeout: the session survives the cut
    const granted = await waiting;
    expect(granted?.owner).toBe('waiter');
    // The same session still holds its other lock: the node went by the retried delete, not by an expiry.
    expect(await exists(raw, kept.token)).toBe(true);
    await waiterBackend.release(granted!);
    await holderBackend.release(kept);
  });
});

describe('zookeeper connection lost mid-frame (node-zookeeper-client keeps the partial frame)', () => {
  it('the next connection is read from a frame boundary: no uncaught exception, the session carries on', async () => {
    const { backend: target, proxy } = await proxiedBackend();
    const held = await grantOf(target, 'mid-frame', 'holder');
    const manager = (target as unknown as { site: { session: { client: { connectionManager: { pendingBuffer: Buffer | null } } } } }).site
      .session.client.connectionManager;
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown): void => void uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      // What a reply cut off after its first bytes leaves behind: a frame length of 64 and 8 of its bytes.
      manager.pendingBuffer = Buffer.concat([Buffer.from([0, 0, 0, 64]), Buffer.alloc(8, 7)]);
      proxy.cut();
      proxy.heal(); // within the 4 s session timeout: the same session reconnects
      const next = await grantOf(target, 'mid-frame-after', 'holder');
      expect(uncaught).toEqual([]);
      // The session survived the cut: the first lock is still held by the same node.
      expect(await exists(raw, held.token)).toBe(true);
      await target.release(next);
      await target.release(held);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});

describe('zookeeper silent partition (no RST, no FIN: node-zookeeper-client never reports it)', () => {
  it('the holder is told it lost the lock before anyone else can be granted it', async () => {
    const { backend: holderBackend, proxy } = await proxiedBackend();
    const held = request('silent', 'holder');
    expect((await holderBackend.tryAcquire(held)).acquired).toBe(true);
    const waiterBackend = backend();
    let grantedAt = 0;
    const waiting = waiterBackend.acquire(request('silent', 'waiter'), Date.now() + 30_000, new AbortController().signal).then((grant) => {
      grantedAt = Date.now();
      return grant;
    });
    const stalledAt = Date.now();
    proxy.partition(); // never healed
    const lost = await held.lostOnce;
    const lostAt = Date.now();
    expect(lost.cause.message).toMatch(/no answer from ZooKeeper/);
    // Within the session timeout (4 s) of the last answer, plus a heartbeat period of slack.
    expect(lostAt - stalledAt).toBeLessThan(4_000 + 1_500);
    const granted = await waiting;
    expect(granted?.owner).toBe('waiter');
    expect(grantedAt).toBeGreaterThanOrEqual(lostAt);
    await waiterBackend.release(granted!);
  });
});

describe('zookeeper connection gone silent for good (a forgotten NAT entry): the read timeout', () => {
  // 2/3 of the 4 s session timeout without a byte from the server, then a new connection (the
  // request in flight on the silent one needs its 2 s operation timeout at most).
  const readTimeoutMs = Math.floor((4_000 * 2) / 3);
  const withinMs = readTimeoutMs + 2_000 + 1_500;

  it('an idle client connects again and gets answers, where node-zookeeper-client kept sending into the silent socket', async () => {
    const { backend: target, proxy } = await proxiedBackend();
    await target.release(await grantOf(target, 'stranded-warm'));
    proxy.strand();
    const answeredAfterMs = await firstTrueWhileCalling(
      takesFreshKey(target, (n) => request(`stranded-${n}`)),
      100,
      3 * withinMs,
    );
    expect(answeredAfterMs, 'no acquire was answered after the connection went silent').toBeDefined();
    expect(answeredAfterMs!).toBeLessThan(withinMs);
    // The silent connection (never closed by the link) and the new one.
    expect(proxy.connections).toBe(2);
  });

  it('a held lock survives: the session resumes on the new connection before it can expire', async () => {
    const { backend: holderBackend, proxy } = await proxiedBackend();
    const held = request('stranded-held', 'holder');
    const result = await holderBackend.tryAcquire(held);
    if (!result.acquired) throw new Error('expected to acquire stranded-held');
    const { grant } = result;
    proxy.strand();
    const answeredAfterMs = await firstTrueWhileCalling(() => holderBackend.renew(grant), 100, 3 * withinMs);
    expect(answeredAfterMs, 'no renewal was answered after the connection went silent').toBeDefined();
    expect(answeredAfterMs!).toBeLessThan(withinMs);
    // Not lost, and the same node: the session, and the lock with it, went on.
    expect(held.lost).toEqual([]);
    expect(await exists(raw, grant.token)).toBe(true);
    expect(proxy.connections).toBe(2);
    await holderBackend.release(grant);
  });
});

describe('zookeeper session expiry', () => {
  it('a waiter whose session expires stops waiting at once with BackendUnavailableError', async () => {
    const holderBackend = backend();
    const holder = await grantOf(holderBackend, 'expiry-waiter', 'holder');
    const queued = counter(1);
    const { backend: waiterBackend, proxy } = await proxiedBackend({ onWatch: () => queued.hit() });
    const waiting = waiterBackend.acquire(request('expiry-waiter', 'waiter'), Date.now() + 60_000, new AbortController().signal);
    await queued.done;
    const killedAt = Date.now();
    await killSession(waiterBackend, proxy, server.url);
    await expect(waiting).rejects.toBeInstanceOf(BackendUnavailableError);
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    expect(await children(raw, `${base}/expiry-waiter`)).toHaveLength(1);
    await holderBackend.release(holder);
  });

  it('a real session EXPIRED (forced as Curator KillSession does) fires onLost for every held lock, once', async () => {
    const { backend: holderBackend, proxy } = await proxiedBackend();
    const first = request('expiry-a');
    const second = request('expiry-b', 'owner-2');
    expect((await holderBackend.tryAcquire(first)).acquired).toBe(true);
    expect((await holderBackend.tryAcquire(second)).acquired).toBe(true);
    await killSession(holderBackend, proxy, server.url);
    const [lostA, lostB] = await Promise.all([first.lostOnce, second.lostOnce]);
    expect(lostA.cause.message).toMatch(/the ZooKeeper session expired/);
    expect(lostB.grant.key).toBe('expiry-b');
    expect(await exists(raw, lostA.grant.token)).toBe(false);
    // The backend opens a new session for the next lock.
    const again = await grantOf(holderBackend, 'expiry-a');
    expect(again.fence).toBeGreaterThan(lostA.grant.fence!);
    await holderBackend.release(again);
    expect(first.lost).toHaveLength(1);
  });
});

describe('zookeeper faults (own standalone server)', () => {
  let faulty: ServerHandle;
  beforeAll(async () => {
    faulty = await startZooKeeper({ tickTimeMs: 500 });
  });
  afterAll(() => faulty?.stop());

  it('a dead server: BackendUnavailableError within the deadline; the holder loses its lock when the session must have expired', async () => {
    const holderBackend = createZooKeeperBackend(
      `${faulty.url}${base}?sessionTimeoutMs=3000&connectTimeoutMs=1500&operationTimeoutMs=1500`,
    );
    try {
      const holding = request('dead');
      const result = await holderBackend.tryAcquire(holding);
      expect(result.acquired).toBe(true);
      await faulty.down();
      const downAt = Date.now();
      // A connected backend whose server died: the request's deadline.
      await expect(holderBackend.tryAcquire(request('dead-2'))).rejects.toBeInstanceOf(BackendUnavailableError);
      expect(Date.now() - downAt).toBeLessThan(1_500 + 2_000);
      // A fresh backend that never connects: the connect deadline.
      const fresh = createZooKeeperBackend(`${faulty.url}${base}?connectTimeoutMs=1000`);
      const startedAt = Date.now();
      await expect(fresh.tryAcquire(request('dead-3'))).rejects.toBeInstanceOf(BackendUnavailableError);
      expect(Date.now() - startedAt).toBeLessThan(1_000 + 2_000);
      await fresh.close();
      // The holder: in doubt while disconnected, lost once a whole session timeout has passed.
      const lost = await holding.lostOnce;
      expect(lost.cause.message).toMatch(/session/);
      expect(Date.now() - downAt).toBeGreaterThanOrEqual(2_500);
      expect(holding.lost).toHaveLength(1);
    } finally {
      await holderBackend.close();
      await faulty.up();
    }
  });

  it("lostOn 'suspended' reports the lock lost at the first disconnection", async () => {
    const holderBackend = createZooKeeperBackend(`${faulty.url}${base}?sessionTimeoutMs=6000&lostOn=suspended`);
    try {
      const holding = request('suspended');
      expect((await holderBackend.tryAcquire(holding)).acquired).toBe(true);
      const downAt = Date.now();
      await faulty.restart();
      await holding.lostOnce;
      expect(Date.now() - downAt).toBeLessThan(6_000 + 5_000);
    } finally {
      await holderBackend.close();
    }
  });
});
