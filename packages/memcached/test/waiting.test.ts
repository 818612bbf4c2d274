import { getEventListeners } from 'node:events';
import type { Grant } from '@deadbolt/core/adapter';
import type memjs from 'memjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeKey, getWithCas, type MemcachedBackend } from '../src/index.js';
import { backendFor, rawClient, request, startMemcached, type ServerHandle } from './support.js';

/** memcached's own counters: how many ADD/SET/DELETE it served (cmd_set counts every store). */
async function storeCount(raw: memjs.Client): Promise<number> {
  return new Promise((resolve, reject) => {
    raw.stats((error, _server, stats) => (error ? reject(error) : resolve(Number(stats?.cmd_set ?? Number.NaN))));
  });
}

describe('memcached waiting and batching', () => {
  let server: ServerHandle;
  let backend: MemcachedBackend;
  let other: MemcachedBackend;
  let raw: memjs.Client;
  beforeAll(async () => {
    server = await startMemcached();
    backend = backendFor(server);
    other = backendFor(server);
    raw = rawClient(server);
  });
  afterAll(async () => {
    await backend?.close();
    await other?.close();
    raw?.close();
    await server?.stop();
  });

  it('local waiters on one key are served in arrival order, and a fresh attempt does not barge', async () => {
    const held = await other.tryAcquire(request('fifo', 'holder'));
    if (!held.acquired) throw new Error('not acquired');
    const order: number[] = [];
    const waits = Array.from({ length: 5 }, (_, i) =>
      backend.acquire(request('fifo', `w${i}`), Date.now() + 10_000, new AbortController().signal).then(async (grant) => {
        order.push(i);
        await backend.release(grant!);
      }),
    );
    // Queued behind local waiters: no attempt goes around them.
    expect((await backend.tryAcquire(request('fifo', 'late'))).acquired).toBe(false);
    await other.release(held.grant);
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  it('a native acquire makes its own first attempt and reports contention only when the key is held', async () => {
    // Free key: the wait's own first attempt grants, and nothing is reported.
    let contended = 0;
    const free = await backend.acquire(
      { ...request('own-first', 'a'), onContended: () => (contended += 1) },
      Date.now() + 5_000,
      new AbortController().signal,
    );
    expect(free).toBeDefined();
    expect(contended).toBe(0);
    // Held key: reported once (by the head's refused attempt, and by a waiter queueing behind it), then granted.
    const reports: string[] = [];
    const head = backend.acquire(
      { ...request('own-first', 'b'), onContended: () => reports.push('b') },
      Date.now() + 5_000,
      new AbortController().signal,
    );
    const behind = backend.acquire(
      { ...request('own-first', 'c'), onContended: () => reports.push('c') },
      Date.now() + 5_000,
      new AbortController().signal,
    );
    // Queued behind a local waiter: reported in the same synchronous run that queues it.
    expect(reports).toContain('c');
    await backend.release(free!);
    const first = await head;
    expect(first).toBeDefined();
    await backend.release(first!);
    const second = await behind;
    expect(second).toBeDefined();
    await backend.release(second!);
    expect(reports.sort()).toEqual(['b', 'c']);
  });

  it('ten local waiters on a busy key cost one poller: stores grow like one waiter, not ten', async () => {
    const held = await other.tryAcquire(request('one-poller', 'holder'));
    if (!held.acquired) throw new Error('not acquired');
    const before = await storeCount(raw);
    // 1.5 s, not 400 ms: the lower bound needs the poller to run for ~20 ms of the window, and a
    // 400 ms window gave 1 poll when this process stalled 500 ms right after the waits began (a
    // loaded CI machine stalls a worker for up to ~1 s).
    const windowMs = 1_500;
    const controller = new AbortController();
    const waits = Array.from({ length: 10 }, (_, i) =>
      backend.acquire(request('one-poller', `w${i}`), Date.now() + windowMs, controller.signal),
    );
    // Ten waits on one signal: one listener of the adapter's on it (a listener each printed
    // MaxListenersExceededWarning once the poller's sleep added an eleventh).
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    expect(await Promise.all(waits)).toEqual(Array.from({ length: 10 }, () => undefined));
    const polls = (await storeCount(raw)) - before;
    // One poller: 1 ms apart for 200 ms, then growing to 8 ms apart: at most ~400 ADDs in 1.5 s (10
    // separate pollers would send ~4,000).
    expect(polls).toBeGreaterThan(10);
    expect(polls).toBeLessThan(600);
    await other.release(held.grant);
  });

  it('renewMany extends 2,000 leases with compare-and-extend and keeps release at one CAS delete', async () => {
    const attempts = await Promise.all(
      Array.from({ length: 2_000 }, (_, i) => backend.tryAcquire(request(`renew-many-${i}`, 'o', 30_000))),
    );
    const grants: Grant[] = attempts.flatMap((attempt) => (attempt.acquired ? [attempt.grant] : []));
    expect(grants).toHaveLength(2_000);
    const before = await getWithCas(raw, encodeKey('renew-many-0'));
    expect(
      await backend.renewMany(
        grants,
        grants.map(() => 5_000),
      ),
    ).toEqual(grants.map(() => true));
    const after = await getWithCas(raw, encodeKey('renew-many-0'));
    expect(after?.value.toString()).toBe(grants[0]!.token);
    expect(after?.cas.equals(before!.cas)).toBe(false);
    // Another owner's item (a stale grant) is never extended.
    const stolen = { ...grants[1]!, token: 'not-ours' };
    expect(await backend.renewMany([stolen], [5_000])).toEqual([false]);
    expect((await Promise.all(grants.map((grant) => backend.release(grant)))).every(Boolean)).toBe(true);
    expect(await getWithCas(raw, encodeKey('renew-many-0'))).toBeUndefined();
  });
});
