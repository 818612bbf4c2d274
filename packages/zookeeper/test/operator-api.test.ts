import { freePort, startZooKeeper, type ServerHandle } from '@deadbolt/conformance/servers';
import { BackendUnavailableError, createLockClient, ForcedReleaseError, LockLostError, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperBackend } from '../src/index.js';
import { forcedDir, sweepMarkers } from '../src/operator-api.js';
import { children, connectStringOf, rawClient } from './support.js';

/**
 * The operator API on ZooKeeper (operator-api.ts): inspect read by the Curator recipes' rules, the
 * forceRelease marker a forced holder reads at its next renewal, list over the base path, and the
 * leader's term. The conformance group `operations` runs the same behaviours where the capability
 * is declared; ZooKeeper does not declare it (no ttlLeftMs on a session lease), so they are here.
 */
let server: ServerHandle;
let raw: Awaited<ReturnType<typeof rawClient>>;
const base = '/deadbolt/operator-api';
const clients: LockClient[] = [];

function client(): LockClient {
  const made = createLockClient({ backend: createZooKeeperBackend(`${server.url}${base}?sessionTimeoutMs=4000&parentCleanupDelayMs=0`) });
  clients.push(made);
  return made;
}

/** Resolves when `signal` aborts (the test's timeout bounds the wait). */
const abortOf = (signal: AbortSignal): Promise<unknown> =>
  signal.aborted
    ? Promise.resolve(signal.reason)
    : new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));

/** Resolves at the client's first 'contended' event: its node is queued behind the holder's. */
const contendedOn = (waiter: LockClient): Promise<void> => new Promise((resolve) => waiter.on('contended', () => resolve()));

beforeAll(async () => {
  server = await startZooKeeper();
  raw = await rawClient(connectStringOf(server.url));
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await raw?.dispose();
  await server?.stop();
});

describe('inspect', () => {
  it("names the mutex's first node (owner from its data, fence its czxid, no ttlLeftMs) and counts the queued node as a waiter", async () => {
    const [holder, waiter, operator] = [client(), client(), client()];
    const lock = await holder.acquire('plain', { autoRenew: false });
    const contended = contendedOn(waiter);
    const queued = waiter.acquire('plain', { waitMs: 20_000 });
    await contended;
    const seen = await operator.inspect('plain');
    expect(seen).toEqual({ key: 'plain', held: true, holders: [{ kind: 'mutex', owner: lock.owner, fence: lock.fence }], waiters: 1 });
    await lock.release();
    await (await queued).release();
    expect(await operator.inspect('plain')).toEqual({ key: 'plain', held: false, holders: [] });
  });

  it('reads a read-write lock as Curator does: two readers hold; a writer first holds alone and the reader behind it waits', async () => {
    const [a, b, operator] = [client(), client(), client()];
    const first = await a.readWriteLock('doc').read.acquire();
    const second = await b.readWriteLock('doc').read.acquire();
    const readers = await operator.inspect('doc');
    expect(readers.holders.map((hold) => hold.kind)).toEqual(['read', 'read']);
    await Promise.all([first.release(), second.release()]);
    const writer = await a.readWriteLock('doc').write.acquire();
    const contended = contendedOn(b);
    const reader = b.readWriteLock('doc').read.acquire({ waitMs: 20_000 });
    await contended;
    const seen = await operator.inspect('doc');
    expect(seen.holders).toEqual([{ kind: 'write', owner: writer.owner, fence: writer.fence }]);
    expect(seen.waiters).toBe(1);
    await writer.release();
    await (await reader).release();
  });

  it("shows a semaphore's held leases as permits", async () => {
    const [a, b, operator] = [client(), client(), client()];
    const first = await a.semaphore('pool', { permits: 3 }).acquire();
    const second = await b.semaphore('pool', { permits: 3 }).acquire();
    const seen = await operator.inspect('pool');
    expect(seen.holders.map((hold) => hold.kind)).toEqual(['permit', 'permit']);
    expect(seen.holders.map((hold) => hold.fence).sort()).toEqual([first.fence, second.fence].sort());
    await Promise.all([first.release(), second.release()]);
  });
});

describe('forceRelease', () => {
  it('deletes the holder’s node, leaves a marker naming the forcing client, and the holder’s next renewal reads it (then removes it)', async () => {
    const [holder, operator, next] = [client(), client(), client()];
    const lock = await holder.acquire('stuck', { ttlMs: 1_500, autoRenew: true });
    const [node] = await children(raw, `${base}/stuck`);
    expect(await operator.forceRelease('stuck')).toBe(true);
    expect(await children(raw, `${base}/${forcedDir}`)).toContain(node);
    const data = await new Promise<string>((resolve, reject) =>
      raw.getData(`${base}/${forcedDir}/${node}`, (error, found) => (error ? reject(error) : resolve(found.toString('utf8')))),
    );
    const taken = await next.tryAcquire('stuck');
    expect(taken).not.toBeNull();
    const reason = await abortOf(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    const cause = (reason as LockLostError).cause;
    expect(cause).toBeInstanceOf(ForcedReleaseError);
    // The marker's data is the forcing client's id, and that is what the holder is told.
    expect(data).not.toBe('');
    expect((cause as ForcedReleaseError).by).toBe(data);
    // Read once by the holder it named, then gone: nobody else needs it.
    expect(await children(raw, `${base}/${forcedDir}`)).not.toContain(node);
    await taken!.release();
    expect(await operator.forceRelease('stuck')).toBe(false);
  });

  it('takes every kind at once: the mutex, the read-write lock and a semaphore’s leases of one key', async () => {
    const [holder, operator] = [client(), client()];
    await holder.acquire('all', { autoRenew: false });
    await holder.readWriteLock('all').read.acquire({ autoRenew: false });
    await holder.semaphore('all', { permits: 2 }).acquire({ autoRenew: false });
    expect((await operator.inspect('all')).holders.map((hold) => hold.kind).sort()).toEqual(['mutex', 'permit', 'read']);
    expect(await operator.forceRelease('all')).toBe(true);
    expect(await operator.inspect('all')).toEqual({ key: 'all', held: false, holders: [] });
  });
});

describe('forced markers', () => {
  it('a sweep deletes the markers older than its age limit (by their ctime) and keeps the newer ones', async () => {
    const [holder, operator] = [client(), client()];
    const markers = `${base}/${forcedDir}`;
    const ctimeOf = (name: string): Promise<number> =>
      new Promise((resolve, reject) =>
        raw.exists(`${markers}/${name}`, (error, found) => (error ? reject(error) : resolve(Number(found.ctime.readBigInt64BE(0))))),
      );
    const forceOne = async (key: string): Promise<{ name: string; ctime: number }> => {
      await holder.acquire(key, { autoRenew: false });
      const [name] = await children(raw, `${base}/${key}`);
      await operator.forceRelease(key);
      return { name: name!, ctime: await ctimeOf(name!) };
    };
    const older = await forceOne('aged-0');
    // Until the server's clock has moved on by a millisecond (a bounded number of forces, no sleep).
    let newer = await forceOne('aged-1');
    for (let round = 2; newer.ctime <= older.ctime && round < 10_000; round += 1) newer = await forceOne(`aged-${round}`);
    expect(newer.ctime).toBeGreaterThan(older.ctime);
    await sweepMarkers(raw, markers, Date.now() + 5_000);
    expect(await children(raw, markers)).toEqual(expect.arrayContaining([older.name, newer.name]));
    await sweepMarkers(raw, markers, Date.now() + 5_000, newer.ctime - older.ctime - 1);
    const left = await children(raw, markers);
    expect(left).toContain(newer.name);
    expect(left).not.toContain(older.name);
  });
});

describe('forceRelease and waiters', () => {
  it('a queued waiter whose node went with the rest queues again and gets the lock', async () => {
    const [holder, waiter, operator] = [client(), client(), client()];
    await holder.acquire('queue', { autoRenew: false });
    const contended = contendedOn(waiter);
    const queued = waiter.acquire('queue', { waitMs: 20_000 });
    await contended;
    expect(await operator.forceRelease('queue')).toBe(true);
    const lock = await queued;
    expect((await operator.inspect('queue')).holders).toEqual([{ kind: 'mutex', owner: lock.owner, fence: lock.fence }]);
    await lock.release();
  });
});

describe('a dead ensemble', () => {
  it('inspect, forceRelease and list fail with BackendUnavailableError within connect + operation timeouts', async () => {
    const port = await freePort();
    const dead = createLockClient({
      backend: createZooKeeperBackend(`zookeeper://127.0.0.1:${port}${base}?connectTimeoutMs=1000&operationTimeoutMs=1000`),
    });
    clients.push(dead);
    const listing = async (): Promise<void> => {
      for await (const _ of dead.list()) break;
    };
    for (const call of [() => dead.inspect('k'), () => dead.forceRelease('k'), listing]) {
      const startedAt = Date.now();
      await expect(call()).rejects.toBeInstanceOf(BackendUnavailableError);
      expect(Date.now() - startedAt).toBeLessThan(1_000 + 1_000 + 2_000);
    }
  });
});

describe('list and observe', () => {
  it('lists held keys by their decoded names under a prefix, never the marker directory, and honours limit', async () => {
    const [holder, operator] = [client(), client()];
    const locks = await Promise.all(['jobs/a', 'jobs/b', 'other'].map((key) => holder.acquire(key)));
    const keys: string[] = [];
    for await (const seen of operator.list({ prefix: 'jobs/' })) keys.push(seen.key);
    expect(keys.sort()).toEqual(['jobs/a', 'jobs/b']);
    const all: string[] = [];
    for await (const seen of operator.list()) all.push(seen.key);
    expect(all).not.toContain(forcedDir);
    expect(all).toContain('other');
    let limited = 0;
    for await (const _ of operator.list({ limit: 1 })) limited += 1;
    expect(limited).toBe(1);
    await Promise.all(locks.map((lock) => lock.release()));
  });

  it("observe names the leader with its node's czxid as the term", async () => {
    const [a, watcher] = [client(), client()];
    const stop = new AbortController();
    const election = a.elect('observed', { id: 'a' });
    const term = await election[Symbol.asyncIterator]().next();
    const changes = watcher.elect('observed', { id: 'w' }).observe({ signal: stop.signal, intervalMs: 20 })[Symbol.asyncIterator]();
    let change = await changes.next();
    while (!change.done && change.value.leader !== 'a') change = await changes.next();
    expect(change.value).toEqual({ leader: 'a', term: term.done ? undefined : term.value.term });
    stop.abort();
    await changes.return?.();
    await election.resign();
  });
});
