import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BackendUnavailableError,
  ClientClosedError,
  createLockClient,
  inOwnerFlow,
  LockLostError,
  type Lock,
  type LockClient,
  type LockEvents,
} from '../src/index.js';
import { deferred, freshMemory, nextEvent, SpyBackend, uniqueName } from './helpers.js';

const clients: LockClient[] = [];

function track(client: LockClient): LockClient {
  clients.push(client);
  return client;
}

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

describe('Symbol.asyncDispose', () => {
  it('`await using` releases the lock at the end of the block', async () => {
    const { url, store } = freshMemory('using');
    const locks = track(createLockClient(url));
    const released = nextEvent(locks, 'released');
    {
      await using lock = await locks.acquire('k');
      expect(lock.held).toBe(true);
      expect(store.size).toBe(1);
    }
    expect(store.size).toBe(0);
    expect(locks.heldCount).toBe(0);
    await released;
  });

  it('`await using` releases when the block throws', async () => {
    const { url, store } = freshMemory('using-throw');
    const locks = track(createLockClient(url));
    let escaped: Lock | undefined;
    const run = async (): Promise<void> => {
      await using lock = await locks.acquire('k');
      escaped = lock;
      throw new Error('work failed');
    };
    await expect(run()).rejects.toThrow('work failed');
    expect(escaped?.held).toBe(false);
    expect(store.size).toBe(0);
  });

  it('dispose after an explicit release is a no-op', async () => {
    const { url, store } = freshMemory('using-twice');
    const locks = track(createLockClient(url));
    const lock = await locks.acquire('k');
    await lock.release();
    const operations = store.operations;
    await lock[Symbol.asyncDispose]();
    expect(store.operations).toBe(operations);
  });
});

describe('release', () => {
  it('is idempotent: a second release does nothing', async () => {
    const { url, store } = freshMemory('release-twice');
    const locks = track(createLockClient(url));
    const releasedEvents: LockEvents['released'][0][] = [];
    locks.on('released', (event) => releasedEvents.push(event));
    const lock = await locks.acquire('k');
    await Promise.all([lock.release(), lock.release()]);
    const operations = store.operations;
    await lock.release();
    expect(store.operations).toBe(operations);
    expect(releasedEvents).toHaveLength(1);
  });

  it('never deletes the lock of the owner who took over after ours vanished', async () => {
    const { url, store } = freshMemory('release-other');
    const a = track(createLockClient(url));
    const b = track(createLockClient(url));
    const mine = await a.acquire('k');
    store.delete('k'); // our lease is gone on the "server" (expired, evicted) and A has not noticed yet
    const theirs = await b.acquire('k', { waitMs: 0 });
    const lost = nextEvent(a, 'lost');
    await mine.release();
    expect(store.live('k', Date.now())?.owner).toBe(theirs.owner);
    expect(theirs.held).toBe(true);
    // A learns at release that it had lost the lock.
    expect((await lost).error).toBeInstanceOf(LockLostError);
  });

  it('after the lease expired and another owner took it, release leaves the new owner alone (fake time)', async () => {
    vi.useFakeTimers();
    const { url, store } = freshMemory('release-expired');
    const a = track(createLockClient(url));
    const b = track(createLockClient(url));
    const mine = await a.acquire('k', { ttlMs: 1_000 });
    await vi.advanceTimersByTimeAsync(1_000);
    const theirs = await b.acquire('k', { waitMs: 0 });
    await mine.release();
    expect(store.live('k', Date.now())?.token).toBeDefined();
    expect(store.live('k', Date.now())?.owner).toBe(theirs.owner);
  });
});

describe('withLock', () => {
  it('returns the body result and releases', async () => {
    const { url, store } = freshMemory('with');
    const locks = track(createLockClient(url));
    const result = await locks.withLock('k', (lock) => {
      expect(lock.held).toBe(true);
      expect(store.size).toBe(1);
      return 42;
    });
    expect(result).toBe(42);
    expect(store.size).toBe(0);
  });

  it('releases when the body throws and rethrows the body error unchanged', async () => {
    const { url, store } = freshMemory('with-throw');
    const locks = track(createLockClient(url));
    const failure = new Error('payment declined');
    await expect(
      locks.withLock('k', async () => {
        await Promise.resolve();
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(store.size).toBe(0);
    expect(locks.heldCount).toBe(0);
  });

  it('passes the lock, whose signal aborts when the lock is lost during the body', async () => {
    vi.useFakeTimers();
    const spy = new SpyBackend(uniqueName('with-signal'));
    const locks = track(createLockClient({ backend: spy }));
    const seen = await locks.withLock(
      'k',
      async (lock) => {
        expect(lock.signal.aborted).toBe(false);
        spy.store.delete('k');
        await vi.advanceTimersByTimeAsync(1_000);
        return { aborted: lock.signal.aborted, reason: lock.signal.reason as unknown };
      },
      { ttlMs: 3_000 },
    );
    expect(seen.aborted).toBe(true);
    expect(seen.reason).toBeInstanceOf(LockLostError);
  });

  it('auto-renews by default, even when a ttl is given, so a long body keeps the lock', async () => {
    vi.useFakeTimers();
    const spy = new SpyBackend(uniqueName('with-renew'));
    const locks = track(createLockClient({ backend: spy }));
    const held = await locks.withLock(
      'k',
      async (lock) => {
        await vi.advanceTimersByTimeAsync(10_000);
        return lock.held;
      },
      { ttlMs: 1_000 },
    );
    expect(held).toBe(true);
    expect(spy.calls.renew).toBeGreaterThanOrEqual(9);
  });

  it('waits like acquire and honours the signal while waiting; the body never runs', async () => {
    const { url, store } = freshMemory('with-wait');
    await track(createLockClient(url)).acquire('k');
    const locks = track(createLockClient(url));
    const body = vi.fn();
    const controller = new AbortController();
    const contended = nextEvent(locks, 'contended');
    const pending = locks.withLock('k', body, { signal: controller.signal });
    await contended;
    controller.abort(new Error('cancel'));
    await expect(pending).rejects.toThrow('cancel');
    expect(body).not.toHaveBeenCalled();
    expect(store.waiterCount).toBe(0);
  });

  it('a release failure after a successful body is thrown; after a failed body it is reported as error', async () => {
    const spy = new SpyBackend(uniqueName('with-release-fail'));
    const locks = track(createLockClient({ backend: spy }));
    const errors: LockEvents['error'][0][] = [];
    locks.on('error', (event) => errors.push(event));
    spy.controls.failReleases = true;
    await expect(locks.withLock('a', () => 'ok')).rejects.toBeInstanceOf(BackendUnavailableError);
    const failure = new Error('body failed');
    await expect(
      locks.withLock('b', () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.key).toBe('b');
    expect(errors[0]?.error).toBeInstanceOf(BackendUnavailableError);
  });
});

describe('close()', () => {
  it('releases held locks so others can take them at once', async () => {
    const { url, store } = freshMemory('close');
    const locks = createLockClient(url);
    const a = await locks.acquire('a');
    await locks.acquire('b');
    expect(store.size).toBe(2);
    await locks.close();
    expect(store.size).toBe(0);
    expect(a.held).toBe(false);
    const other = track(createLockClient(url));
    expect(await other.tryAcquire('a')).not.toBeNull();
  });

  it('rejects new calls with ClientClosedError before any I/O', async () => {
    const { url, store } = freshMemory('close-reject');
    const locks = createLockClient(url);
    await locks.close();
    const operations = store.operations;
    await expect(locks.acquire('k')).rejects.toBeInstanceOf(ClientClosedError);
    await expect(locks.tryAcquire('k')).rejects.toBeInstanceOf(ClientClosedError);
    await expect(locks.withLock('k', () => 1)).rejects.toBeInstanceOf(ClientClosedError);
    expect(store.operations).toBe(operations);
  });

  it('aborts pending waits with ClientClosedError and leaves no waiter behind', async () => {
    const { url, store } = freshMemory('close-wait');
    await track(createLockClient(url)).acquire('k');
    const locks = createLockClient(url);
    const contended = nextEvent(locks, 'contended');
    const pending = locks.acquire('k', { waitMs: 30_000 });
    await contended;
    const startedAt = Date.now();
    await locks.close();
    await expect(pending).rejects.toBeInstanceOf(ClientClosedError);
    expect(Date.now() - startedAt).toBeLessThan(1_500);
    expect(store.waiterCount).toBe(0);
  });

  it('is idempotent, and handles of a closed client can still be released or disposed, without error or I/O', async () => {
    const spy = new SpyBackend(uniqueName('close-handles'));
    const locks = createLockClient({ backend: spy });
    const lock = await locks.acquire('k');
    const reentered = await inOwnerFlow(async () => {
      const outer = await locks.acquire('r');
      await locks.acquire('r');
      return outer;
    });
    await Promise.all([locks.close(), locks.close()]);
    await locks.close();
    expect(spy.calls.close).toBe(1);
    expect(spy.calls.release).toBe(2);
    await expect(lock.release()).resolves.toBeUndefined();
    await expect(lock[Symbol.asyncDispose]()).resolves.toBeUndefined();
    await expect(reentered.release()).resolves.toBeUndefined();
    expect(spy.calls.release).toBe(2);
  });

  it('the signal of a lock held at close() aborts, and renew() rejects', async () => {
    const { url } = freshMemory('close-signal');
    const locks = createLockClient(url);
    const lock = await locks.acquire('k');
    await locks.close();
    expect(lock.signal.aborted).toBe(true);
    await expect(lock.renew()).rejects.toBeInstanceOf(ClientClosedError);
  });

  it('a withLock body running at close() finishes without a release error', async () => {
    const { url, store } = freshMemory('close-body');
    const locks = createLockClient(url);
    const inside = deferred();
    const finish = deferred();
    const running = locks.withLock('k', async () => {
      inside.resolve();
      await finish.promise;
      return 'done';
    });
    await inside.promise;
    await locks.close();
    finish.resolve();
    await expect(running).resolves.toBe('done');
    expect(store.size).toBe(0);
  });

  it('stops the renewal timer (fake timers: none left)', async () => {
    vi.useFakeTimers();
    const spy = new SpyBackend(uniqueName('close-timers'));
    const locks = createLockClient({ backend: spy });
    for (let i = 0; i < 20; i++) await locks.acquire(`k${i}`);
    expect(vi.getTimerCount()).toBe(1);
    await locks.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(spy.calls.close).toBe(1);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(spy.calls.renew).toBe(0);
  });

  it('leaves no active handles behind (real timers)', async () => {
    const baseline = activeResources();
    const { url } = freshMemory('close-handles-real');
    const holder = createLockClient(url);
    const locks = createLockClient(url);
    for (let i = 0; i < 10; i++) await locks.acquire(`k${i}`);
    await holder.acquire('busy');
    const contended = nextEvent(locks, 'contended');
    const waiting = locks.acquire('busy', { waitMs: 30_000 }).catch(() => undefined);
    await contended;
    await Promise.all([locks.close(), holder.close()]);
    await waiting;
    expect(activeResources()).toEqual(baseline);
  });
});

/** Active resources by type, as Node reports them (timers, sockets, handles). */
function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}
