import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MemoryStore } from '../src/adapter/index.js';
import { createLockClient, inOwnerFlow, type LockClient } from '../src/index.js';
import { deferred, freshMemory, recordEvents } from './helpers.js';

let locks: LockClient;
let other: LockClient;
let store: MemoryStore;

beforeEach(() => {
  const memory = freshMemory('reentrancy');
  store = memory.store;
  locks = createLockClient(memory.url);
  other = createLockClient(memory.url);
});

afterEach(async () => {
  await Promise.all([locks.close(), other.close()]);
});

/** True when a different client could take the key now (then gives it back). */
async function isFree(key: string): Promise<boolean> {
  const probe = await other.tryAcquire(key);
  await probe?.release();
  return probe !== null;
}

describe('reentrancy by async flow', () => {
  it('withLock nested in withLock re-enters without waiting or a second grant', async () => {
    const result = await locks.withLock('k', async (outer) => {
      const operations = store.operations;
      const inner = await locks.withLock(
        'k',
        async (lock) => {
          expect(lock.owner).toBe(outer.owner);
          expect(lock.fence).toBe(outer.fence);
          expect(locks.heldCount).toBe(1);
          return 'inner';
        },
        { waitMs: 0 },
      );
      // Client-side reentrancy: the nested hold cost no backend call at all.
      expect(store.operations).toBe(operations);
      // The inner release did not free the lock: the outer hold remains.
      expect(await isFree('k')).toBe(false);
      return inner;
    });
    expect(result).toBe('inner');
    expect(await isFree('k')).toBe(true);
  });

  it('deeply awaited code inside inOwnerFlow is the same owner and needs as many releases', async () => {
    await inOwnerFlow(async () => {
      const first = await locks.acquire('k');
      const second = await (async () => {
        await Promise.resolve();
        return locks.acquire('k', { waitMs: 0 });
      })();
      const third = await locks.tryAcquire('k');
      expect(third).not.toBeNull();
      expect(second.owner).toBe(first.owner);
      await first.release();
      expect(await isFree('k')).toBe(false);
      await third?.release();
      expect(await isFree('k')).toBe(false);
      await second.release();
      expect(await isFree('k')).toBe(true);
    });
  });

  it('releasing the same handle twice counts once', async () => {
    await inOwnerFlow(async () => {
      const a = await locks.acquire('k');
      const b = await locks.acquire('k');
      await a.release();
      await a.release();
      expect(await isFree('k')).toBe(false);
      expect(b.held).toBe(true);
      await b.release();
      expect(await isFree('k')).toBe(true);
    });
  });

  it('emits acquired with reentered: true for a re-entry', async () => {
    const events = recordEvents(locks);
    await inOwnerFlow(async () => {
      const a = await locks.acquire('k');
      const b = await locks.acquire('k');
      await b.release();
      await a.release();
    });
    const acquired = events.filter((e) => e.name === 'acquired').map((e) => (e.payload as { reentered: boolean }).reentered);
    expect(acquired).toEqual([false, true]);
  });

  it('two concurrent flows are two owners: the second is refused while the first holds', async () => {
    const holding = deferred();
    const done = deferred();
    const first = locks.withLock('k', async () => {
      holding.resolve();
      await done.promise;
    });
    await holding.promise;
    const second = await inOwnerFlow(() => locks.tryAcquire('k'));
    expect(second).toBeNull();
    await expect(locks.withLock('k', () => 'never', { waitMs: 0 })).rejects.toMatchObject({ name: 'LockTimeoutError' });
    done.resolve();
    await first;
  });

  it('flows started side by side exclude each other (exactly one wins a single attempt)', async () => {
    const results = await Promise.all([0, 1, 2, 3].map(() => inOwnerFlow(() => locks.tryAcquire('k'))));
    expect(results.filter((r) => r !== null)).toHaveLength(1);
  });

  it('top-level acquires outside any flow are separate owners', async () => {
    await locks.acquire('k');
    await expect(locks.acquire('k', { waitMs: 0 })).rejects.toMatchObject({ name: 'LockTimeoutError' });
  });

  it('one flow re-enters only its own key', async () => {
    await inOwnerFlow(async () => {
      await locks.acquire('a');
      const b = await locks.acquire('b', { waitMs: 0 });
      expect(locks.heldCount).toBe(2);
      await b.release();
    });
  });
});

describe('reentrancy by explicit owner', () => {
  it('the same owner re-enters from anywhere; another owner is blocked until the last release', async () => {
    const a = await locks.acquire('k', { owner: 'job-7' });
    const b = await locks.acquire('k', { owner: 'job-7', waitMs: 0 });
    expect(a.owner).toBe('job-7');
    expect(locks.heldCount).toBe(1);
    expect(await locks.tryAcquire('k', { owner: 'job-8' })).toBeNull();
    await a.release();
    expect(await locks.tryAcquire('k', { owner: 'job-8' })).toBeNull();
    await b.release();
    const c = await locks.tryAcquire('k', { owner: 'job-8' });
    expect(c).not.toBeNull();
    await c?.release();
  });

  it('an explicit owner overrides the flow owner', async () => {
    await inOwnerFlow(async () => {
      await locks.acquire('k');
      expect(await locks.tryAcquire('k', { owner: 'someone-else' })).toBeNull();
    });
  });

  it('a lost lease is not re-entered: the next acquire asks the backend again', async () => {
    const a = await locks.acquire('k', { owner: 'job-1' });
    store.delete('k');
    const thief = await other.acquire('k');
    // The client does not know yet; re-entering must not hand out a hold on a lock someone else has.
    await a.renew().catch(() => undefined);
    expect(a.held).toBe(false);
    expect(await locks.tryAcquire('k', { owner: 'job-1' })).toBeNull();
    await thief.release();
  });
});
