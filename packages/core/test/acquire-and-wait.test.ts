import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLockClient, defaultLockDefaults, LockTimeoutError, type Lock, type LockClient } from '../src/index.js';
import { freshMemory, nextEvent } from './helpers.js';

const clients: LockClient[] = [];

function client(url: string, options: Omit<Parameters<typeof createLockClient>[0] & object, 'url'> = {}): LockClient {
  const created = createLockClient({ url, ...options });
  clients.push(created);
  return created;
}

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

/** Settles the microtask queue (and 0 ms timers) without moving the fake clock. */
async function settle(): Promise<void> {
  await vi.advanceTimersByTimeAsync(0);
}

describe('acquire and tryAcquire', () => {
  it('acquire returns a held lock with key, owner, fence and a live signal', async () => {
    const { url, store } = freshMemory('acq');
    const locks = client(url);
    const lock = await locks.acquire('order:1');
    expect(lock.key).toBe('order:1');
    expect(typeof lock.owner).toBe('string');
    expect(lock.fence).toBeTypeOf('number');
    expect(lock.signal.aborted).toBe(false);
    expect(lock.held).toBe(true);
    expect(locks.heldCount).toBe(1);
    expect(store.live('order:1', Date.now())?.owner).toBe(lock.owner);
    await lock.release();
    expect(lock.held).toBe(false);
    expect(locks.heldCount).toBe(0);
    expect(store.size).toBe(0);
  });

  it('fencing tokens strictly increase across holders of a key', async () => {
    const { url } = freshMemory('acq-fence');
    const a = client(url);
    const b = client(url);
    const fences: number[] = [];
    for (let i = 0; i < 5; i++) {
      const lock = await (i % 2 === 0 ? a : b).acquire('k');
      fences.push(lock.fence ?? Number.NaN);
      await lock.release();
    }
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1] ?? Infinity);
  });

  it('tryAcquire returns null when another owner holds the lock, after exactly one attempt', async () => {
    const { url, store } = freshMemory('try');
    const holder = client(url);
    const other = client(url);
    const held = await holder.acquire('k');
    const before = store.operations;
    expect(await other.tryAcquire('k')).toBeNull();
    expect(store.operations - before).toBe(1);
    await held.release();
    const lock = await other.tryAcquire('k');
    expect(lock).not.toBeNull();
    await lock?.release();
  });

  it('independent keys never block each other', async () => {
    const { url } = freshMemory('independent');
    const a = client(url);
    const b = client(url);
    await a.acquire('k1');
    const lock = await b.acquire('k2', { waitMs: 0 });
    expect(lock.held).toBe(true);
  });
});

describe('waitMs', () => {
  it('rejects with LockTimeoutError at waitMs, not before, naming key and backend', async () => {
    vi.useFakeTimers();
    const { url } = freshMemory('wait');
    const holder = client(url);
    const waiter = client(url);
    await holder.acquire('k', { ttlMs: 60_000 });
    let outcome: unknown;
    const pending = waiter.acquire('k', { waitMs: 1_500 }).then(
      () => (outcome = 'acquired'),
      (error: unknown) => (outcome = error),
    );
    await vi.advanceTimersByTimeAsync(1_499);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await pending;
    expect(outcome).toBeInstanceOf(LockTimeoutError);
    const timeout = outcome as LockTimeoutError;
    expect(timeout.key).toBe('k');
    expect(timeout.backend).toBe('memory');
    expect(timeout.waitMs).toBe(1_500);
    expect(timeout.attempts).toBeGreaterThanOrEqual(1);
    expect(timeout.message).toContain('"k"');
    expect(timeout.message).toContain('memory');
  });

  it('waitMs 0 tries once and times out at once', async () => {
    const { url, store } = freshMemory('wait0');
    await client(url).acquire('k');
    const before = store.operations;
    await expect(client(url).acquire('k', { waitMs: 0 })).rejects.toMatchObject({ name: 'LockTimeoutError', attempts: 1, waitMs: 0 });
    expect(store.operations - before).toBe(1);
  });

  it('the default wait is finite (10 s): nothing waits forever by accident', async () => {
    expect(Number.isFinite(defaultLockDefaults.waitMs)).toBe(true);
    vi.useFakeTimers();
    const { url } = freshMemory('wait-default');
    await client(url).acquire('k');
    let outcome: unknown;
    const pending = client(url)
      .acquire('k')
      .catch((error: unknown) => (outcome = error));
    await vi.advanceTimersByTimeAsync(defaultLockDefaults.waitMs - 1);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await pending;
    expect(outcome).toMatchObject({ name: 'LockTimeoutError', waitMs: defaultLockDefaults.waitMs });
  });

  it('a waiter gets a lock whose ttl runs out, at the expiry (the pttl hint), without a release', async () => {
    vi.useFakeTimers();
    const { url } = freshMemory('wait-expiry');
    // A holder that stops renewing (a crashed process): its own client would declare it lost.
    await client(url).acquire('k', { ttlMs: 1_000, autoRenew: false });
    let lock: Lock | undefined;
    const pending = client(url)
      .acquire('k', { waitMs: 5_000 })
      .then((l) => (lock = l));
    await vi.advanceTimersByTimeAsync(999);
    expect(lock).toBeUndefined();
    await vi.advanceTimersByTimeAsync(2);
    await pending;
    expect(lock?.held).toBe(true);
  });
});

describe('wake-up on release', () => {
  it('a waiter is woken by the release itself, with no clock time passing (not by a poll)', async () => {
    vi.useFakeTimers();
    const { url } = freshMemory('wake');
    const holder = client(url);
    const waiter = client(url);
    const held = await holder.acquire('k');
    const contended = nextEvent(waiter, 'contended');
    let lock: Lock | undefined;
    const pending = waiter.acquire('k', { waitMs: 30_000 }).then((l) => (lock = l));
    await contended;
    await settle();
    expect(lock).toBeUndefined();
    const clockBefore = Date.now();
    await held.release();
    await settle();
    expect(lock?.held).toBe(true);
    expect(Date.now()).toBe(clockBefore);
    await pending;
  });

  it('many waiters are all served, one at a time (real timers, real races)', async () => {
    const { url } = freshMemory('many');
    const contenders = Array.from({ length: 8 }, () => client(url));
    let inside = 0;
    let maxInside = 0;
    let served = 0;
    await Promise.all(
      contenders.flatMap((c) =>
        [0, 1, 2].map(() =>
          c.withLock(
            'hot',
            async () => {
              inside += 1;
              maxInside = Math.max(maxInside, inside);
              // Yield to the event loop so that others really try while this one holds.
              await new Promise((resolve) => setImmediate(resolve));
              inside -= 1;
              served += 1;
            },
            { waitMs: 20_000 },
          ),
        ),
      ),
    );
    expect(served).toBe(24);
    expect(maxInside).toBe(1);
  });
});

describe('AbortSignal', () => {
  it('cancels a wait promptly with the signal reason and leaves nothing behind', async () => {
    const { url, store } = freshMemory('abort');
    const holder = client(url);
    const waiter = client(url);
    const held = await holder.acquire('k');
    const controller = new AbortController();
    const contended = nextEvent(waiter, 'contended');
    const startedAt = Date.now();
    const pending = waiter.acquire('k', { waitMs: 30_000, signal: controller.signal });
    await contended;
    expect(store.waiterCount).toBe(1);
    const reason = new Error('user navigated away');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    // Promptly: far below the 30 s wait and the 2 s notification fallback.
    expect(Date.now() - startedAt).toBeLessThan(1_500);
    expect(store.waiterCount).toBe(0);
    expect(waiter.heldCount).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    // The holder is untouched, and once it releases nothing of the waiter remains.
    expect(store.live('k', Date.now())?.owner).toBe(held.owner);
    await held.release();
    expect(store.size).toBe(0);
  });

  it('a signal that never fires keeps no listener once the acquire is over (acquired or timed out)', async () => {
    const { url } = freshMemory('abort-listeners');
    const controller = new AbortController();
    const locks = client(url);
    const lock = await locks.acquire('k', { signal: controller.signal });
    await expect(client(url).acquire('k', { waitMs: 20, signal: controller.signal })).rejects.toBeInstanceOf(LockTimeoutError);
    await lock.release();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('one signal on many waiting acquires adds one listener to it (no MaxListenersExceededWarning), none after', async () => {
    const { url } = freshMemory('abort-shared');
    const holder = await client(url).acquire('k');
    const controller = new AbortController();
    const waiter = client(url);
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      const contended = Array.from({ length: 20 }, () => nextEvent(waiter, 'contended'));
      const pending = Array.from({ length: 20 }, () =>
        waiter.acquire('k', { waitMs: 30_000, signal: controller.signal }).catch((error: unknown) => error),
      );
      await Promise.all(contended);
      // Node warns past 10 listeners on one EventTarget; a listener per acquire also cost O(n) per add.
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
      const reason = new Error('give up');
      controller.abort(reason);
      expect(await Promise.all(pending)).toEqual(Array.from({ length: 20 }, () => reason));
      await new Promise<void>((resolve) => setImmediate(resolve)); // a warning is emitted on a later tick
      expect(warnings.map((warning) => warning.name)).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
    // A second batch on a signal that never fires: the listener goes with the last acquire.
    const quiet = new AbortController();
    const waits = Array.from({ length: 12 }, () => waiter.acquire('k', { waitMs: 20, signal: quiet.signal }).catch(() => undefined));
    expect(getEventListeners(quiet.signal, 'abort')).toHaveLength(1);
    await Promise.all(waits);
    expect(getEventListeners(quiet.signal, 'abort')).toHaveLength(0);
    await holder.release();
  });

  it('an abort during the wait under fake timers needs no clock time', async () => {
    vi.useFakeTimers();
    const { url, store } = freshMemory('abort-fake');
    await client(url).acquire('k');
    const waiter = client(url);
    const controller = new AbortController();
    const contended = nextEvent(waiter, 'contended');
    let outcome: unknown;
    const pending = waiter.acquire('k', { signal: controller.signal }).catch((error: unknown) => (outcome = error));
    await contended;
    const clockBefore = Date.now();
    controller.abort();
    await settle();
    await pending;
    expect((outcome as Error).name).toBe('AbortError');
    expect(Date.now()).toBe(clockBefore);
    expect(store.waiterCount).toBe(0);
    expect(vi.getTimerCount()).toBe(1); // only the holder's renewal timer
  });
});
