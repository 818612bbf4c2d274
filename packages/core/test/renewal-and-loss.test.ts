import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  BackendUnavailableError,
  createLockClient,
  LockLostError,
  LockReleasedError,
  type LockClient,
  type LockEvents,
} from '../src/index.js';
import { nextEvent, SpyBackend, uniqueName } from './helpers.js';

const clients: LockClient[] = [];

function clientOn(backend: SpyBackend, defaults: { ttlMs?: number } = {}): LockClient {
  const client = createLockClient({ backend, defaults });
  clients.push(client);
  return client;
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  vi.useRealTimers();
});

describe('auto-renew', () => {
  it('renews at ttl/3 and keeps the lock well past its ttl', async () => {
    const spy = new SpyBackend(uniqueName('renew'));
    const locks = clientOn(spy, { ttlMs: 3_000 });
    const lock = await locks.acquire('k');
    await vi.advanceTimersByTimeAsync(999);
    expect(spy.calls.renew).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(spy.calls.renew).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(spy.calls.renew).toBe(2);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(lock.held).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    // The server agrees: the entry is alive and ours long after the first ttl.
    expect(spy.store.live('k', Date.now())?.owner).toBe(lock.owner);
    const other = clientOn(new SpyBackend(spy.storeName));
    expect(await other.tryAcquire('k')).toBeNull();
  });

  it('is the default when no ttl is given, and off when a ttl is given (as Redisson)', async () => {
    const spy = new SpyBackend(uniqueName('renew-default'));
    const locks = clientOn(spy);
    await locks.acquire('auto');
    await locks.acquire('fixed', { ttlMs: 30_000 });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(spy.calls.renew).toBe(1);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(spy.store.live('auto', Date.now())).toBeDefined();
    expect(spy.store.live('fixed', Date.now())).toBeUndefined();
  });

  it('uses one timer per client however many locks it holds', async () => {
    const spy = new SpyBackend(uniqueName('timers'));
    const locks = clientOn(spy, { ttlMs: 3_000 });
    expect(vi.getTimerCount()).toBe(0);
    for (let i = 0; i < 200; i++) await locks.acquire(`k${i}`);
    expect(locks.heldCount).toBe(200);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(vi.getTimerCount()).toBe(1);
  });

  it('batches the renewals of locks taken close together into one renewMany per tick', async () => {
    const spy = new SpyBackend(uniqueName('batch'), { renewMany: true });
    const locks = clientOn(spy, { ttlMs: 3_000 });
    for (let i = 0; i < 50; i++) await locks.acquire(`k${i}`);
    // Taken a little later, but within a sixth of the ttl: still the same batch.
    await vi.advanceTimersByTimeAsync(300);
    for (let i = 50; i < 60; i++) await locks.acquire(`k${i}`);
    await vi.advanceTimersByTimeAsync(700);
    expect(spy.calls.renewMany).toBe(1);
    expect(spy.renewManyBatches).toEqual([60]);
    expect(spy.calls.renew).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(spy.calls.renewMany).toBeLessThanOrEqual(12);
    expect(spy.renewManyBatches.every((size) => size === 60)).toBe(true);
    expect(locks.heldCount).toBe(60);
  });

  it('without renewMany, the due leases are still renewed in one tick (one renew each)', async () => {
    const spy = new SpyBackend(uniqueName('no-batch'));
    const locks = clientOn(spy, { ttlMs: 3_000 });
    for (let i = 0; i < 10; i++) await locks.acquire(`k${i}`);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(spy.calls.renew).toBe(10);
  });

  it('stops renewing a released lock, and drops the timer when nothing is held', async () => {
    const spy = new SpyBackend(uniqueName('stop'));
    const locks = clientOn(spy, { ttlMs: 3_000 });
    const lock = await locks.acquire('k');
    await lock.release();
    // Left armed (unref'd) for one grace tick, so the next lock does not arm a timer of its own...
    expect(vi.getTimerCount()).toBe(1);
    const next = await locks.acquire('k2');
    await next.release();
    expect(vi.getTimerCount()).toBe(1);
    // ...and dropped by the first tick that finds nothing held.
    await vi.advanceTimersToNextTimerAsync();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(spy.calls.renew).toBe(0);
  });

  it('emits renewed for each confirmed renewal', async () => {
    const spy = new SpyBackend(uniqueName('renewed'));
    const locks = clientOn(spy, { ttlMs: 3_000 });
    const renewed: LockEvents['renewed'][0][] = [];
    locks.on('renewed', (event) => renewed.push(event));
    const lock = await locks.acquire('k');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(renewed).toEqual([
      { key: 'k', owner: lock.owner },
      { key: 'k', owner: lock.owner },
    ]);
  });
});

describe('a lease without auto-renew', () => {
  it('is declared lost locally before the server lets anyone else have it', async () => {
    const name = uniqueName('expiry');
    const spy = new SpyBackend(name);
    const locks = clientOn(spy);
    const other = clientOn(new SpyBackend(name));
    const lock = await locks.acquire('k', { ttlMs: 1_000 });
    await vi.advanceTimersByTimeAsync(985);
    expect(lock.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(5); // t = 990: past 1000 - 1% - 2 ms drift allowance
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(lock.held).toBe(false);
    expect(spy.calls.renew).toBe(0);
    // The server entry itself lives to exactly ttl: the holder was told 10 ms before anyone else could take it.
    expect(await other.tryAcquire('k')).toBeNull();
    await vi.advanceTimersByTimeAsync(10);
    expect(await other.tryAcquire('k')).not.toBeNull();
  });

  it('a manual renew() extends it', async () => {
    const spy = new SpyBackend(uniqueName('manual'));
    const locks = clientOn(spy);
    const lock = await locks.acquire('k', { ttlMs: 1_000 });
    await vi.advanceTimersByTimeAsync(800);
    await lock.renew();
    expect(spy.calls.renew).toBe(1);
    await vi.advanceTimersByTimeAsync(900); // t = 1700: past the first ttl, inside the renewed one
    expect(lock.held).toBe(true);
    expect(spy.store.live('k', Date.now())).toBeDefined();
    await vi.advanceTimersByTimeAsync(200);
    expect(lock.held).toBe(false);
  });
});

describe('loss detection', () => {
  it('the entry vanishing behind the client is found at the next renewal: signal, lost event, heldCount', async () => {
    const spy = new SpyBackend(uniqueName('lost'));
    const locks = clientOn(spy, { ttlMs: 3_000 });
    const lock = await locks.acquire('k');
    const lost = nextEvent(locks, 'lost');
    const aborted = new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
    spy.store.delete('k');
    await vi.advanceTimersByTimeAsync(1_000);
    await aborted;
    const event = await lost;
    expect(event.key).toBe('k');
    expect(event.owner).toBe(lock.owner);
    expect(event.error).toBeInstanceOf(LockLostError);
    expect(lock.signal.reason).toBe(event.error);
    expect((event.error as LockLostError).key).toBe('k');
    expect((event.error as LockLostError).backend).toBe('spy-memory');
    expect(lock.held).toBe(false);
    expect(locks.heldCount).toBe(0);
  });

  it('a renewal the backend refuses (renewMany answering false) is a loss', async () => {
    const spy = new SpyBackend(uniqueName('refused'), { renewMany: true });
    const locks = clientOn(spy, { ttlMs: 3_000 });
    const lock = await locks.acquire('k');
    spy.controls.refuseRenewals = true;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
  });

  it('renewals that fail (no answer) are retried and reported; the lease is lost when its deadline passes', async () => {
    const spy = new SpyBackend(uniqueName('failing'));
    const locks = clientOn(spy, { ttlMs: 3_000 });
    const errors: Error[] = [];
    locks.on('error', ({ error }) => errors.push(error));
    const lock = await locks.acquire('k');
    spy.controls.failRenewals = true;
    await vi.advanceTimersByTimeAsync(2_900);
    expect(lock.signal.aborted).toBe(false);
    expect(spy.calls.renew).toBeGreaterThan(2); // retried sooner than every ttl/3
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toBeInstanceOf(BackendUnavailableError);
    await vi.advanceTimersByTimeAsync(100); // past 3000 - 1% - 2 ms
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
  });

  it('a renewal that succeeds after failures keeps the lock', async () => {
    const spy = new SpyBackend(uniqueName('recover'));
    const locks = clientOn(spy, { ttlMs: 3_000 });
    locks.on('error', () => undefined);
    const lock = await locks.acquire('k');
    spy.controls.failRenewals = true;
    await vi.advanceTimersByTimeAsync(1_500);
    spy.controls.failRenewals = false;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(lock.held).toBe(true);
  });

  it('renew() after a loss rejects with LockLostError', async () => {
    const spy = new SpyBackend(uniqueName('renew-lost'));
    const locks = clientOn(spy, { ttlMs: 3_000 });
    const lock = await locks.acquire('k');
    spy.store.delete('k');
    await expect(lock.renew()).rejects.toBeInstanceOf(LockLostError);
    expect(lock.signal.aborted).toBe(true);
    await expect(lock.renew()).rejects.toBeInstanceOf(LockLostError);
  });

  it('renew() after release rejects with LockReleasedError', async () => {
    const spy = new SpyBackend(uniqueName('renew-released'));
    const locks = clientOn(spy);
    const lock = await locks.acquire('k');
    await lock.release();
    const error = await lock.renew().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockReleasedError);
    expect((error as LockReleasedError).key).toBe('k');
    expect(spy.calls.renew).toBe(0);
  });
});
