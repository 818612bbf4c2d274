import type { ConformanceCase } from './context.js';
import { assertClosesClean } from './handles.js';
import { assert } from './util.js';

export const closeLeavesNothing: ConformanceCase = {
  title: 'close() leaves no open sockets or timers (handle count, and every handle the client opened)',
  async run(ctx) {
    await assertClosesClean(
      'close() with a lock held',
      async () => {
        const client = ctx.client();
        const lock = await client.acquire('k', { autoRenew: true });
        const held = await client.acquire('k2', { autoRenew: true });
        await lock.release();
        void held; // left held on purpose: close() must clean it up
        await client.close();
      },
      1_000,
    );
  },
};

export const manyLocks: ConformanceCase = {
  title: 'many locks held with auto-renew, then released: all released',
  async run(ctx) {
    const client = ctx.client();
    const keys = Array.from({ length: ctx.scaleLocks }, (_, i) => `scale-${i}`);
    // At least five bursts: every call's deadline starts when it is made, and a backend that runs
    // the case with few, costly locks (ZooKeeper's ensemble: 500 locks, three quorum requests each)
    // timed out its first burst of 500 at a load of 10 while the servers were merely slow.
    const burst = Math.min(500, Math.max(50, Math.ceil(keys.length / 5)));
    const locks = [];
    for (let i = 0; i < keys.length; i += burst) {
      locks.push(...(await Promise.all(keys.slice(i, i + burst).map((key) => client.acquire(key, { autoRenew: true, waitMs: 0 })))));
    }
    assert(client.heldCount === keys.length, `heldCount ${client.heldCount}, expected ${keys.length}`);
    // Released in the same bursts: 10,000 releases issued in one tick on a loaded 2-core machine
    // timed out while queued locally.
    for (let i = 0; i < locks.length; i += burst) await Promise.all(locks.slice(i, i + burst).map((lock) => lock.release()));
    assert(client.heldCount === 0, `heldCount ${client.heldCount} after releasing all`);
    const other = ctx.client();
    for (let i = 0; i < keys.length; i += burst) {
      const got = await Promise.all(keys.slice(i, i + burst).map((key) => other.tryAcquire(key)));
      const busy = got.filter((lock) => lock === null).length;
      assert(busy === 0, `${busy} keys still busy after release`);
      await Promise.all(got.map((lock) => lock?.release()));
    }
  },
};

export const hygieneCases: readonly ConformanceCase[] = [closeLeavesNothing, manyLocks];
