import { LockLostError, LockTimeoutError } from '@deadbolt/core';
import { type ConformanceCase, needsTtl } from './context.js';
import { aborted, assert, delay, rejection, waitUntil } from './util.js';

/**
 * Expiry is judged against this slack: timers, polling steps and a shared 2-core machine, plus
 * one expiry granule for backends whose clock ticks coarsely (memcached: whole seconds, minTtlMs 1000).
 */
const TOLERANCE_MS = 1_000;
const granule = (minTtlMs: number): number => (minTtlMs >= 1_000 ? minTtlMs : 0);

export const expiry: ConformanceCase = {
  title: `expiry frees the lock after ttl and not before (tolerance ${TOLERANCE_MS} ms)`,
  requires: needsTtl,
  async run(ctx) {
    const [holder, other] = [ctx.client(), ctx.client()];
    const start = Date.now();
    const lock = await holder.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    await delay(ctx.ttlMs / 2 - (Date.now() - start));
    assert((await other.tryAcquire('k')) === null, `another client took the key at ttl/2 (${Date.now() - start} ms)`);
    let taken: Awaited<ReturnType<typeof other.tryAcquire>> = null;
    const freed = await waitUntil(
      async () => {
        taken = await other.tryAcquire('k');
        return taken !== null;
      },
      ctx.ttlMs + TOLERANCE_MS + granule(ctx.capabilities.minTtlMs) - (Date.now() - start),
    );
    assert(freed, `still busy after ttl + ${TOLERANCE_MS + granule(ctx.capabilities.minTtlMs)} ms`);
    assert(Date.now() - start >= ctx.ttlMs / 2, 'freed before ttl/2');
    await lock.release();
    await (taken as { release(): Promise<void> } | null)?.release();
  },
};

export const autoRenewKeeps: ConformanceCase = {
  title: 'auto-renew keeps the lock for 3x ttl against a contender',
  requires: needsTtl,
  async run(ctx) {
    const [holder, contender] = [ctx.client(), ctx.client()];
    const lock = await holder.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: true });
    const error = await rejection(contender.acquire('k', { waitMs: ctx.ttlMs * 3 }));
    assert(error instanceof LockTimeoutError, `contender got ${String(error)} instead of LockTimeoutError`);
    assert(lock.held && !lock.signal.aborted, 'holder lost its auto-renewed lock');
    await lock.release();
  },
};

export const manualRenewKeeps: ConformanceCase = {
  title: 'renew extends the lease past its ttl',
  requires: needsTtl,
  async run(ctx) {
    const [holder, other] = [ctx.client(), ctx.client()];
    const lock = await holder.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    const end = Date.now() + ctx.ttlMs * 2;
    while (Date.now() < end) {
      await delay(ctx.ttlMs / 3);
      await lock.renew();
    }
    assert((await other.tryAcquire('k')) === null, 'another client took a renewed lock');
    await lock.release();
  },
};

export const lostLease: ConformanceCase = {
  title: "a lost lease fires lock.signal and 'lost'",
  requires: needsTtl,
  async run(ctx) {
    const holder = ctx.client();
    let lostEvents = 0;
    holder.on('lost', () => {
      lostEvents += 1;
    });
    const lock = await holder.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    await aborted(lock.signal, ctx.ttlMs * 3 + 5_000);
    assert(lock.signal.reason instanceof LockLostError, `signal reason is ${String(lock.signal.reason)}, not LockLostError`);
    assert(await waitUntil(() => lostEvents === 1, 1_000), `'lost' emitted ${lostEvents} times`);
    assert(!lock.held, 'a lost lock still reports held');
  },
};

export const renewAfterLoss: ConformanceCase = {
  title: 'renew after loss rejects with LockLostError',
  requires: needsTtl,
  async run(ctx) {
    const lock = await ctx.client().acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    await aborted(lock.signal, ctx.ttlMs * 3 + 5_000);
    const error = await rejection(lock.renew());
    assert(error instanceof LockLostError, `expected LockLostError, got ${String(error)}`);
  },
};

/**
 * A holder whose process stalls (GC, SIGSTOP) past its ttl must not get its lease back by renewing:
 * the stall is a synchronous busy-wait, so no local loss timer can run before renew() is called
 * and the answer has to come from the backend (Kleppmann's paused-client scenario).
 */
export const renewAfterPause: ConformanceCase = {
  title: 'renew after a process pause longer than ttl rejects with LockLostError',
  requires: needsTtl,
  async run(ctx) {
    const lock = await ctx.client().acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    const until = Date.now() + ctx.ttlMs + 100;
    while (Date.now() < until) {
      // busy-wait: the simulated pause
    }
    const error = await rejection(lock.renew());
    assert(error instanceof LockLostError, `renew after a pause past ttl: expected LockLostError, got ${String(error)}`);
  },
};

export const leaseCases: readonly ConformanceCase[] = [
  expiry,
  autoRenewKeeps,
  manualRenewKeeps,
  lostLease,
  renewAfterLoss,
  renewAfterPause,
];
