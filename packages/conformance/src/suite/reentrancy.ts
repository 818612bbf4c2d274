import type { ConformanceCase } from './context.js';
import { assert, delay } from './util.js';

export const nested: ConformanceCase = {
  title: 'nested withLock by the same flow re-enters',
  async run(ctx) {
    const client = ctx.client();
    const depth = await client.withLock('k', () => client.withLock('k', () => client.withLock('k', () => 3, { waitMs: 0 }), { waitMs: 0 }));
    assert(depth === 3, 'nested withLock did not run');
    assert(client.heldCount === 0, `heldCount ${client.heldCount} after the outermost release`);
  },
};

export const blockedUntilLastRelease: ConformanceCase = {
  title: 'other owners are blocked until the last re-entrant release',
  async run(ctx) {
    const [owner, other] = [ctx.client(), ctx.client()];
    await owner.withLock('k', async () => {
      const inner = await owner.acquire('k', { waitMs: 0 });
      await inner.release();
      assert((await other.tryAcquire('k')) === null, 'another owner got the key after an inner release');
    });
    const after = await other.tryAcquire('k');
    assert(after !== null, 'key still busy after the last release');
    await after.release();
  },
};

export const concurrentFlows: ConformanceCase = {
  title: 'two concurrent flows on one client are two owners',
  async run(ctx) {
    const client = ctx.client();
    let inside = 0;
    let overlaps = 0;
    const flow = () =>
      client.withLock(
        'k',
        async () => {
          inside += 1;
          if (inside > 1) overlaps += 1;
          await delay(50);
          inside -= 1;
        },
        { waitMs: 10_000 },
      );
    await Promise.all([flow(), flow()]);
    assert(overlaps === 0, 'two async flows were inside the lock at once: they were treated as one owner');
  },
};

export const reentrancyCases: readonly ConformanceCase[] = [nested, blockedUntilLastRelease, concurrentFlows];
