import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import {
  ClientClosedError,
  createLockClient,
  InvalidArgumentError,
  UnsupportedOperationError,
  type Lock,
  type LockClient,
} from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisBackend, slotOf } from '../src/index.js';
import { kindKeys } from '../src/modes/fair-kinds.js';
import { getEventListeners } from 'node:events';
import { Opened, request } from './support.js';

let server: ServerHandle;
const opened = new Opened();
const clients: LockClient[] = [];

beforeAll(async () => {
  server = await startRedis();
});
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((client) => client.close()));
  await opened.closeAll();
});
afterAll(() => server?.stop());

function client(prefix: string, mode = 'fair'): LockClient {
  const created = createLockClient({ url: `${server.url}?mode=${mode}`, prefix });
  clients.push(created);
  return created;
}

/** Calls of one command since the last CONFIG RESETSTAT (commands run by scripts count too). */
async function calls(raw: ReturnType<Opened['raw']>, command: string): Promise<number> {
  const info = await raw.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

describe('redis fair mode: read-write locks and semaphores', () => {
  it('keeps every key of one primitive in one Cluster slot, apart from the mutex and the other primitive', () => {
    for (const key of ['plain', 'a{tag}b', 'odd}key']) {
      const keys = [...kindKeys(key, 'rw'), ...kindKeys(key, 'sem')];
      expect(new Set(keys.map(slotOf))).toEqual(new Set([slotOf(kindKeys(key, 'rw')[0]!)]));
      expect(new Set(keys).size).toBe(10);
    }
  });

  it('refuses a semaphore of another size while one is in use (InvalidArgumentError), and accepts it once it is gone', async () => {
    const [a, b] = [client('sz:'), client('sz:')];
    const held = await a.semaphore('quota', { permits: 2 }).acquire();
    const error = await b
      .semaphore('quota', { permits: 3 })
      .tryAcquire()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String(error)).toMatch(/in use with 2 permits, not 3/);
    expect(String(error)).toContain('redis:fair');
    const same = await b.semaphore('quota', { permits: 2 }).tryAcquire();
    expect(same).not.toBeNull();
    await Promise.all([held.release(), same!.release()]);
    const resized = await b.semaphore('quota', { permits: 3 }).tryAcquire();
    expect(resized).not.toBeNull();
    await resized!.release();
  });

  it('other modes refuse both before any I/O with UnsupportedOperationError naming the fair mode', async () => {
    const setnx = client('un:', 'setnx');
    await expect(setnx.readWriteLock('k').read.acquire()).rejects.toBeInstanceOf(UnsupportedOperationError);
    await expect(setnx.semaphore('k', { permits: 2 }).tryAcquire()).rejects.toThrow(/capabilities\.semaphore is not true.*\?mode=fair/);
  });

  it('a freed permit is granted in the releasing script with ONE message, to the head waiter only; nothing is left after', async () => {
    const raw = opened.raw(server.url);
    const holders = [client('one:'), client('one:')];
    const held = await Promise.all(holders.map((c) => c.semaphore('s', { permits: 2 }).acquire()));
    const waiters = [client('one:'), client('one:'), client('one:')];
    const order: number[] = [];
    const pending: Promise<Lock>[] = [];
    for (const [index, waiter] of waiters.entries()) {
      const contended = new Promise((resolve) => waiter.once('contended', resolve));
      const acquiring = waiter.semaphore('s', { permits: 2 }).acquire({ waitMs: 10_000 });
      pending.push(acquiring.then((lock) => (order.push(index), lock)));
      await contended;
    }
    // Only grants publish (a waiter's re-check or heartbeat finds no room): count those of one release.
    await raw.config('RESETSTAT');
    await held[0]!.release();
    const first = await Promise.race(pending);
    expect(await calls(raw, 'publish')).toBe(1);
    expect(order).toEqual([0]);
    await held[1]!.release();
    await first.release();
    const rest = await Promise.all(pending.slice(1));
    expect(order).toEqual([0, 1, 2]);
    await Promise.all(rest.map((lock) => lock.release()));
    expect((await raw.keys('*one:s*')).sort()).toEqual(['{one:s}:sem:fence']);
  });

  it("on the app's own connection without a commandTimeout, close() with waiters queued and a release in flight: the release completes, the waiters get ClientClosedError, no unhandled rejection", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      // Without a commandTimeout the backend bounds calls itself and cuts them short at close: it
      // used to cut a release the server was answering ("the backend is closed").
      const connection = opened.raw(server.url);
      const locks = createLockClient({ backend: createRedisBackend({ mode: 'fair', client: connection }), prefix: 'own:' });
      const sem = locks.semaphore('s', { permits: 2 });
      // Another client holds every permit: this one's close() has no hold of its own to release first.
      const holder = client('own:').semaphore('s', { permits: 2 });
      const held = await Promise.all([holder.acquire(), holder.acquire()]);
      const waiting: Promise<unknown>[] = [];
      for (let i = 0; i < 3; i += 1) {
        const contended = new Promise((resolve) => locks.once('contended', resolve));
        waiting.push(
          sem.acquire({ waitMs: 10_000 }).then(
            () => 'granted',
            (error: unknown) => error,
          ),
        );
        await contended;
      }
      const other = await locks.semaphore('other', { permits: 2 }).acquire();
      const releasing = other.release().then(
        () => 'released',
        (error: unknown) => error,
      );
      await locks.close();
      expect(await releasing).toBe('released');
      for (const outcome of await Promise.all(waiting)) expect(outcome).toBeInstanceOf(ClientClosedError);
      await Promise.all(held.map((lock) => lock.release()));
      expect((await connection.keys('*own:*')).sort()).toEqual(['{own:other}:sem:fence', '{own:s}:sem:fence']);
      // Node reports a rejection nobody handled once the microtasks have run: one macrotask later.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('waiters sharing one abort signal (a client queues them all under its close signal) add one listener to it, and all leave when it aborts', async () => {
    const backend = opened.backend(server.url, { mode: 'fair', waiterLeaseMs: 3_000 });
    const permit = { ...request('fan:s'), kind: { type: 'permit', permits: 1 } as const };
    // Permits are the kinds driver's holds: it issues and releases them.
    const kinds = backend.kinds!;
    const held = await kinds.acquire!(permit, Date.now() + 1_000, new AbortController().signal);
    expect(held).toBeDefined();
    const shared = new AbortController();
    let queued = 0;
    let allQueued: () => void = () => undefined;
    const thirtyQueued = new Promise<void>((resolve) => {
      allQueued = resolve;
    });
    const waiter = { ...permit, onContended: () => (++queued === 30 ? allQueued() : undefined) };
    const waiting = Array.from({ length: 30 }, () => kinds.acquire!(waiter, Date.now() + 10_000, shared.signal));
    await thirtyQueued;
    const raw = opened.raw(server.url);
    expect(await raw.llen('{fan:s}:sem:queue')).toBe(30);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(1);
    shared.abort(new Error('test abort'));
    expect(await Promise.all(waiting)).toEqual(Array.from({ length: 30 }, () => undefined));
    expect(await raw.exists('{fan:s}:sem:queue', '{fan:s}:sem:waiters')).toBe(0);
    expect(await kinds.release(held!)).toBe(true);
  });

  it('acquireAll takes the free keys and joins every busy queue in one script; an abort leaves no entry and no key behind', async () => {
    const raw = opened.raw(server.url);
    const [holder, multi] = [client('mq:'), client('mq:')];
    const held = await Promise.all(['k1', 'k2'].map((key) => holder.acquire(key)));
    const contended = new Promise((resolve) => multi.once('contended', resolve));
    const controller = new AbortController();
    const pending = multi.acquireAll(['k1', 'k2', 'k3'], { waitMs: 10_000, signal: controller.signal });
    await contended;
    const token = await raw.get('mq:k3');
    expect(token).toMatch(/\.m[0-9a-z]+$/);
    for (const key of ['k1', 'k2']) expect(await raw.lrange(`{mq:${key}}:queue`, 0, -1)).toHaveLength(1);
    controller.abort(new Error('test abort'));
    await expect(pending).rejects.toThrow('test abort');
    for (const key of ['k1', 'k2']) expect(await raw.exists(`{mq:${key}}:queue`, `{mq:${key}}:waiters`)).toBe(0);
    expect(await raw.exists('mq:k3')).toBe(0);
    expect(held.every((lock) => lock.held)).toBe(true);
    await Promise.all(held.map((lock) => lock.release()));
  });

  it("an election's leader() is read from the term's token; a resign hands the term to the queued follower at once", async () => {
    const [a, b] = [client('el:'), client('el:')];
    const first = a.elect('chair', { id: 'node-ä' })[Symbol.asyncIterator]();
    const term = await first.next();
    expect(term.done).toBe(false);
    expect(await b.elect('chair', { id: 'x' }).leader()).toBe('node-ä');
    const follower = b.elect('chair', { id: 'node-b' });
    const queued = new Promise((resolve) => b.once('contended', resolve));
    const next = follower[Symbol.asyncIterator]().next();
    await queued;
    await first.return?.();
    const second = await next;
    expect(second.done).toBe(false);
    expect(await a.elect('chair', { id: 'y' }).leader()).toBe('node-b');
    await follower.resign();
  });
});
