import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createMemoryBackend,
  InvalidArgumentError,
  memoryCapabilities,
  type AcquireRequest,
  type Grant,
  type MemoryBackend,
} from '../src/adapter/index.js';
import { memoryBackendFactory } from '../src/memory/backend.js';
import { uniqueName } from './helpers.js';

let backend: MemoryBackend;

function request(key: string, owner: string, ttlMs = 1_000): AcquireRequest {
  return { key, owner, ttlMs, onLost: () => undefined };
}

async function grant(key: string, owner: string, ttlMs = 1_000): Promise<Grant> {
  const result = await backend.tryAcquire(request(key, owner, ttlMs));
  if (!result.acquired) throw new Error(`expected ${owner} to acquire ${key}`);
  return result.grant;
}

beforeEach(() => {
  vi.useFakeTimers();
  backend = createMemoryBackend(uniqueName('mem'));
});

afterEach(async () => {
  await backend.close();
  vi.useRealTimers();
});

describe('capabilities', () => {
  it('declares a CP, fencing, client-reentrant, notifying ttl backend with a 4 KiB key limit', () => {
    expect(backend.name).toBe('memory');
    expect(backend.capabilities).toEqual(memoryCapabilities);
    expect(memoryCapabilities).toMatchObject({
      fencing: true,
      reentrant: 'client',
      notifications: true,
      lease: 'ttl',
      minTtlMs: 1,
      maxKeyBytes: 4096,
    });
    expect(Object.isFrozen(memoryCapabilities)).toBe(true);
  });
});

describe('tryAcquire', () => {
  it('grants a free key once; a second owner is busy with the remaining lease as a hint', async () => {
    const first = await grant('k', 'a', 1_000);
    expect(first).toMatchObject({ key: 'k', owner: 'a' });
    await vi.advanceTimersByTimeAsync(400);
    const second = await backend.tryAcquire(request('k', 'b'));
    expect(second).toEqual({ acquired: false, retryAfterMs: 600 });
  });

  it('is one exclusive grant even for the same owner (reentrancy is core policy, not the backend)', async () => {
    await grant('k', 'a');
    expect((await backend.tryAcquire(request('k', 'a'))).acquired).toBe(false);
  });

  it('gives unique tokens and strictly increasing fences per key, never reused after release or expiry', async () => {
    const fences: number[] = [];
    const tokens = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const g = await grant('k', `o${i}`);
      fences.push(g.fence ?? 0);
      tokens.add(g.token);
      await backend.release(g);
    }
    const expiring = await grant('k', 'x', 10);
    fences.push(expiring.fence ?? 0);
    await vi.advanceTimersByTimeAsync(10);
    fences.push((await grant('k', 'y')).fence ?? 0);
    expect(fences).toEqual([1, 2, 3, 4, 5]);
    expect(tokens.size).toBe(3);
    // Another key has its own sequence.
    expect((await grant('other', 'a')).fence).toBe(1);
  });

  it('frees a key exactly at its ttl, not before', async () => {
    await grant('k', 'a', 1_000);
    await vi.advanceTimersByTimeAsync(999);
    expect((await backend.tryAcquire(request('k', 'b'))).acquired).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect((await backend.tryAcquire(request('k', 'b'))).acquired).toBe(true);
  });
});

describe('renew and release are owner-checked', () => {
  it('renew extends only the current grant', async () => {
    const g = await grant('k', 'a', 1_000);
    await vi.advanceTimersByTimeAsync(900);
    expect(await backend.renew(g, 1_000)).toBe(true);
    await vi.advanceTimersByTimeAsync(900);
    expect(backend.store.live('k', Date.now())?.token).toBe(g.token);
    await vi.advanceTimersByTimeAsync(100);
    expect(await backend.renew(g, 1_000)).toBe(false); // expired
  });

  it('renew with a stale grant (another owner holds the key now) is refused and changes nothing', async () => {
    const old = await grant('k', 'a', 100);
    await vi.advanceTimersByTimeAsync(100);
    const current = await grant('k', 'b', 1_000);
    expect(await backend.renew(old, 60_000)).toBe(false);
    expect(backend.store.live('k', Date.now())).toMatchObject({ token: current.token, expiresAt: Date.now() + 1_000 });
  });

  it('release deletes only its own grant: a stale grant never deletes the new holder', async () => {
    const old = await grant('k', 'a', 100);
    await vi.advanceTimersByTimeAsync(100);
    const current = await grant('k', 'b', 1_000);
    expect(await backend.release(old)).toBe(false);
    expect(backend.store.live('k', Date.now())?.token).toBe(current.token);
    expect(await backend.release(current)).toBe(true);
    expect(await backend.release(current)).toBe(false);
    expect(backend.store.size).toBe(0);
  });

  it('a forged grant with the right key and owner but a wrong token is refused', async () => {
    const g = await grant('k', 'a');
    expect(await backend.release({ ...g, token: 'forged' })).toBe(false);
    expect(await backend.renew({ ...g, token: 'forged' }, 1_000)).toBe(false);
    expect(backend.store.size).toBe(1);
  });
});

describe('waitForChange', () => {
  it('resolves on release with no time passing', async () => {
    const g = await grant('k', 'a', 60_000);
    let woke = false;
    const waiting = backend.waitForChange('k', 30_000, new AbortController().signal).then(() => (woke = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(woke).toBe(false);
    expect(backend.store.waiterCount).toBe(1);
    await backend.release(g);
    await vi.advanceTimersByTimeAsync(0);
    expect(woke).toBe(true);
    await waiting;
    expect(backend.store.waiterCount).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves at maxWaitMs at the latest', async () => {
    await grant('k', 'a', 60_000);
    let woke = false;
    const waiting = backend.waitForChange('k', 500, new AbortController().signal).then(() => (woke = true));
    await vi.advanceTimersByTimeAsync(499);
    expect(woke).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(backend.store.waiterCount).toBe(0);
  });

  it('resolves at once when the key is already free', async () => {
    await expect(backend.waitForChange('free', 30_000, new AbortController().signal)).resolves.toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('rejects on abort with the reason and removes its waiter and timer', async () => {
    await grant('k', 'a', 60_000);
    const controller = new AbortController();
    const waiting = backend.waitForChange('k', 30_000, controller.signal);
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(backend.store.waiterCount).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a release wakes the longest-waiting waiter of the key (FIFO hand-off), and only of that key', async () => {
    const g = await grant('k', 'a', 60_000);
    await grant('other', 'a', 60_000);
    const woken: string[] = [];
    const signal = new AbortController().signal;
    const waits = [
      backend.waitForChange('k', 30_000, signal).then(() => woken.push('k1')),
      backend.waitForChange('k', 30_000, signal).then(() => woken.push('k2')),
      backend.waitForChange('other', 30_000, signal).then(() => woken.push('other')),
    ];
    await backend.release(g);
    await vi.advanceTimersByTimeAsync(0);
    expect(woken).toEqual(['k1']);
    await vi.advanceTimersByTimeAsync(30_000);
    await Promise.all(waits);
  });
});

describe('the memory:// factory and named stores', () => {
  it('memory://name shares a store per name; other names are isolated', async () => {
    const name = uniqueName('factory');
    const a = memoryBackendFactory({ url: new URL(`memory://${name}`), options: {} });
    const b = memoryBackendFactory({ url: new URL(`memory://${name}`), options: {} });
    const c = memoryBackendFactory({ url: new URL(`memory://${uniqueName('else')}`), options: {} });
    expect((await a.tryAcquire(request('k', 'a'))).acquired).toBe(true);
    expect((await b.tryAcquire(request('k', 'b'))).acquired).toBe(false);
    expect((await c.tryAcquire(request('k', 'c'))).acquired).toBe(true);
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  it('takes ?prefix= (core applies it) but no other parameter, and only the name option', () => {
    expect(() => memoryBackendFactory({ url: new URL('memory://x?prefix=p:'), options: {} })).not.toThrow();
    expect(() => memoryBackendFactory({ url: new URL('memory://x?ttl=5'), options: {} })).toThrow(InvalidArgumentError);
    expect(() => memoryBackendFactory({ options: { name: 'x', shards: 2 } })).toThrow(InvalidArgumentError);
  });

  it('a closed backend refuses further calls', async () => {
    const closing = createMemoryBackend(uniqueName('closed'));
    await closing.close();
    await expect(closing.tryAcquire(request('k', 'a'))).rejects.toThrow(/closed/);
  });
});
