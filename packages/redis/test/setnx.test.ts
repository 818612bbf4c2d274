import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fenceKey } from '../src/index.js';
import { waitingKey } from '../src/keys.js';
import { grantOf, Opened, request } from './support.js';

let server: ServerHandle;
const opened = new Opened();

beforeAll(async () => {
  server = await startRedis();
});
afterEach(() => opened.closeAll());
afterAll(() => server?.stop());

describe('redis setnx mode', () => {
  it('stores the plain random token under the exact key and a fence counter in the same slot', async () => {
    const backend = opened.backend(server.url);
    const raw = opened.raw(server.url);
    const grant = await grantOf(backend, request('plain:key', 10_000));
    expect(await raw.get('plain:key')).toBe(grant.token);
    expect(grant.token).toMatch(/^[0-9a-f]{32}$/);
    expect(Number(await raw.get(fenceKey('plain:key')))).toBe(grant.fence);
    expect(await raw.pttl('plain:key')).toBeGreaterThan(9_000);
  });

  it('an uncontended release publishes nothing; while someone waits, releases announce themselves', async () => {
    const backend = opened.backend(server.url);
    const raw = opened.raw(server.url);
    const publishes = async (): Promise<number> => Number(/cmdstat_publish:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0);
    await raw.config('RESETSTAT');
    for (let i = 0; i < 10; i += 1) await backend.release(await grantOf(backend, request('lean:key', 10_000)));
    expect(await publishes()).toBe(0);
    const held = await grantOf(backend, request('lean:key', 10_000, 'a'));
    const waiting = backend.waitForChange!('lean:key', 10_000, new AbortController().signal);
    // The waiter marks the key once its subscription is live (and checks the lock in the same step).
    for (const until = Date.now() + 5_000; (await raw.exists(waitingKey('lean:key'))) === 0; ) {
      if (Date.now() > until) throw new Error('the waiter never marked the key');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await backend.release(held);
    await waiting;
    expect(await publishes()).toBe(1);
  });

  it('returns the holder pttl as retryAfterMs when busy', async () => {
    const backend = opened.backend(server.url);
    await grantOf(backend, request('busy:key', 5_000, 'a'));
    const result = await backend.tryAcquire(request('busy:key', 5_000, 'b'));
    expect(result.acquired).toBe(false);
    if (result.acquired) return;
    expect(result.retryAfterMs).toBeGreaterThan(3_000);
    expect(result.retryAfterMs).toBeLessThanOrEqual(5_000);
  });

  it('a release with a stale grant does not delete the new owner key (atomic compare-and-delete)', async () => {
    const backend = opened.backend(server.url);
    const raw = opened.raw(server.url);
    const stale = await grantOf(backend, request('stale:key', 10_000, 'a'));
    // The lease ran out (forced, so the test does not depend on timing) and B took the lock.
    await raw.del('stale:key');
    const current = await grantOf(backend, request('stale:key', 10_000, 'b'));
    expect(await backend.release(stale)).toBe(false);
    expect(await backend.renew(stale, 60_000)).toBe(false);
    expect(await raw.get('stale:key')).toBe(current.token);
    expect(await raw.pttl('stale:key')).toBeLessThanOrEqual(10_000);
    expect(await backend.release(current)).toBe(true);
    expect(await raw.exists('stale:key')).toBe(0);
  });

  it('fencing tokens strictly increase across holders and clients', async () => {
    const first = opened.backend(server.url);
    const second = opened.backend(server.url);
    const fences: number[] = [];
    for (let round = 0; round < 6; round += 1) {
      const backend = round % 2 === 0 ? first : second;
      const grant = await grantOf(backend, request('fence:key', 10_000, `owner-${round}`));
      fences.push(grant.fence ?? Number.NaN);
      expect(await backend.release(grant)).toBe(true);
    }
    for (let index = 1; index < fences.length; index += 1) expect(fences[index]).toBeGreaterThan(fences[index - 1]!);
    // A failed attempt does not consume a fence.
    const held = await grantOf(first, request('fence:key', 10_000, 'holder'));
    expect((await second.tryAcquire(request('fence:key', 10_000, 'other'))).acquired).toBe(false);
    await first.release(held);
    const next = await grantOf(second, request('fence:key', 10_000, 'other'));
    expect(next.fence).toBe((held.fence ?? 0) + 1);
  });

  it('renew extends only our own lease', async () => {
    const backend = opened.backend(server.url);
    const raw = opened.raw(server.url);
    const grant = await grantOf(backend, request('renew:key', 1_000));
    expect(await backend.renew(grant, 60_000)).toBe(true);
    expect(await raw.pttl('renew:key')).toBeGreaterThan(50_000);
  });

  it('with an empty prefix, excludes a hand-written standard SET NX PX + compare-and-delete client on one key', async () => {
    const key = 'interop:resource';
    const client = createLockClient({ url: `${server.url}?mode=setnx`, prefix: '' });
    const raw = opened.raw(server.url);
    const intervals: { who: string; start: number; end: number }[] = [];
    let inside = 0;
    let overlaps = 0;
    const critical = async (who: string): Promise<void> => {
      inside += 1;
      if (inside > 1) overlaps += 1;
      const start = performance.now();
      // Hold across several event-loop turns and a server round trip, so overlaps would show.
      await raw.ping();
      await new Promise((resolve) => setImmediate(resolve));
      await raw.ping();
      intervals.push({ who, start, end: performance.now() });
      inside -= 1;
    };
    // The other implementation: the protocol of the Redis docs, written by hand.
    const compareAndDelete = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    const standard = async (rounds: number): Promise<void> => {
      for (let done = 0; done < rounds; ) {
        const token = `std-${done}-${Math.random().toString(36).slice(2)}`;
        if ((await raw.set(key, token, 'PX', 10_000, 'NX')) === 'OK') {
          await critical('standard');
          expect(await raw.eval(compareAndDelete, 1, key, token)).toBe(1);
          done += 1;
        } else {
          await raw.ping(); // the standard client's retry: one more round trip, then try again
        }
      }
    };
    const deadbolt = async (rounds: number): Promise<void> => {
      for (let done = 0; done < rounds; done += 1) {
        await client.withLock(key, () => critical('deadbolt'), { ttlMs: 10_000, waitMs: 30_000 });
      }
    };
    try {
      await Promise.all([standard(40), deadbolt(40), standard(40), deadbolt(40)]);
    } finally {
      await client.close();
    }
    expect(overlaps).toBe(0);
    expect(intervals.filter((interval) => interval.who === 'standard')).toHaveLength(80);
    expect(intervals.filter((interval) => interval.who === 'deadbolt')).toHaveLength(80);
    const sorted = [...intervals].sort((a, b) => a.start - b.start);
    for (let index = 1; index < sorted.length; index += 1) expect(sorted[index]!.start).toBeGreaterThanOrEqual(sorted[index - 1]!.end);
  });
});
