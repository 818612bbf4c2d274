import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { grantOf, Opened, request } from './support.js';

let server: ServerHandle;
const opened = new Opened();

beforeAll(async () => {
  server = await startRedis();
});
afterEach(() => opened.closeAll());
afterAll(() => server?.stop());

describe('redis hash-reentrant mode (seed 001)', () => {
  it('keeps the hold count on the server: field = owner, value = count; the last release deletes', async () => {
    const backend = opened.backend(server.url, { mode: 'hash-reentrant' });
    const raw = opened.raw(server.url);
    expect(backend.capabilities.reentrant).toBe('server');
    const first = await grantOf(backend, request('h:count', 10_000, 'owner-1'));
    const again = await grantOf(backend, request('h:count', 10_000, 'owner-1'));
    expect(again.fence).toBe(first.fence); // a re-entry is the same holding
    expect(holds(await raw.hgetall('h:count'))).toEqual({ 'owner-1': '2' });
    const other = await backend.tryAcquire(request('h:count', 10_000, 'owner-2'));
    expect(other.acquired).toBe(false);
    expect(await backend.release({ ...first, owner: 'owner-2', token: 'owner-2' })).toBe(false);
    expect(await backend.release(first)).toBe(true);
    expect(holds(await raw.hgetall('h:count'))).toEqual({ 'owner-1': '1' });
    expect(await backend.release(again)).toBe(true);
    expect(await raw.exists('h:count')).toBe(0);
    expect(await backend.release(again)).toBe(false);
    const next = await grantOf(backend, request('h:count', 10_000, 'owner-2'));
    expect(next.fence).toBeGreaterThan(first.fence ?? Number.POSITIVE_INFINITY);
  });

  it('through the client: nested acquires in one flow re-enter on the server, another client waits for the last release', async () => {
    const url = `${server.url}?mode=hash-reentrant`;
    const a = createLockClient(url);
    const b = createLockClient(url);
    const raw = opened.raw(server.url);
    try {
      await a.withLock('nested', async () => {
        await a.withLock('nested', async () => {
          const stored = holds(await raw.hgetall('deadbolt:nested'));
          expect(Object.values(stored)).toEqual(['2']);
          expect(await b.tryAcquire('nested')).toBeNull();
        });
        expect(Object.values(holds(await raw.hgetall('deadbolt:nested')))).toEqual(['1']);
        expect(await b.tryAcquire('nested')).toBeNull();
      });
      const lock = await b.acquire('nested', { waitMs: 5_000, ttlMs: 5_000 });
      await lock.release();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

/** The owners' hold counts: the hash without its '' field (the last attempt's id, for hash-undo). */
function holds(hash: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(hash).filter(([field]) => field !== ''));
}
