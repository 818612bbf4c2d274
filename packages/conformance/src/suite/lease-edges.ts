import { LockLostError, LockTimeoutError } from '@deadbolt/core';
import { type ConformanceCase, type ResolvedOptions, needsTtl } from './context.js';
import { assert, delay, rejection, waitUntil } from './util.js';

/**
 * Lease edges the probe of issue 14 showed untested: a lease that is not a whole number of
 * seconds, the end of a lease (not only its middle), fences across expiry, an old handle of the
 * same owner, held/signal after a pause, and a batch of renewals.
 */

/** A lease length that is not a whole number of seconds and still short: 450 ms, or 1,500 ms where the minimum is a second. */
const fractionalTtl = (minTtlMs: number): number => (minTtlMs >= 1_000 ? 1_500 : Math.max(450, minTtlMs));
/** Expiry slack tied to the declared minimum ttl (memcached rounds up to whole seconds), plus timer/polling noise on a shared machine. */
const expirySlack = (minTtlMs: number): number => minTtlMs + 500;

function needsFencingTtl(options: ResolvedOptions): string | undefined {
  if (!options.capabilities.fencing) return 'capabilities.fencing is false';
  return needsTtl(options);
}

export const fractionalExpiry: ConformanceCase = {
  title: 'a 1.5 s / 450 ms lease is still refused at ~88% of its ttl and free within ttl + minTtlMs + 500 ms',
  requires: needsTtl,
  async run(ctx) {
    const [holder, other] = [ctx.client(), ctx.client()];
    const ttlMs = fractionalTtl(ctx.capabilities.minTtlMs);
    const slackMs = expirySlack(ctx.capabilities.minTtlMs);
    const start = Date.now();
    const lock = await holder.acquire('k', { ttlMs, autoRenew: false });
    // The server started the lease after `start`: at start + 88% it has at least 12% left.
    const lateAt = start + Math.floor(ttlMs * 0.88);
    if (Date.now() < lateAt) {
      await delay(lateAt - Date.now());
      const early = await other.tryAcquire('k');
      const answeredAt = Date.now() - start;
      // An answer after the ttl may come from an attempt the server ran after the expiry: no verdict then.
      if (early !== null && answeredAt < ttlMs) throw new Error(`another client took the key at ${answeredAt} ms of a ${ttlMs} ms lease`);
      if (early !== null)
        console.info(`[deadbolt conformance] ${ctx.name}: the late-lease attempt was answered only at ${answeredAt} ms, no verdict`);
      await early?.release();
    } else {
      console.info(`[deadbolt conformance] ${ctx.name}: acquire took ${Date.now() - start} ms, late-lease check not reachable`);
    }
    let taken: Awaited<ReturnType<typeof other.tryAcquire>> = null;
    const freed = await waitUntil(
      async () => {
        taken = await other.tryAcquire('k', { ttlMs: 30_000, autoRenew: false });
        return taken !== null;
      },
      start + ttlMs + slackMs - Date.now(),
      10,
    );
    assert(freed, `still busy ${Date.now() - start} ms after acquiring a ${ttlMs} ms lease (bound ttl + ${slackMs} ms)`);
    await lock.release();
    await (taken as { release(): Promise<void> } | null)?.release();
  },
};

export const fencesAcrossExpiry: ConformanceCase = {
  title: 'fences strictly increase when the key changes hands because a lease expired',
  requires: needsFencingTtl,
  async run(ctx) {
    const [first, second] = [ctx.client(), ctx.client()];
    const expired = await first.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    const next = await second.acquire('k', { ttlMs: 30_000, autoRenew: false, waitMs: ctx.ttlMs * 3 + ctx.capabilities.minTtlMs + 2_000 });
    assert(expired.fence !== undefined && next.fence !== undefined, 'a fencing backend gave no fence');
    assert(next.fence > expired.fence, `fence after expiry ${next.fence} is not above ${expired.fence}`);
    await next.release();
  },
};

export const staleHandleSameOwner: ConformanceCase = {
  title: 'an expired handle of the same owner can neither release nor renew that owner\u2019s newer hold',
  requires: needsTtl,
  async run(ctx) {
    const [client, other] = [ctx.client(), ctx.client()];
    const owner = 'one-owner';
    const old = await client.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false, owner });
    const gone = await waitUntil(
      async () => {
        const probe = await other.tryAcquire('k');
        await probe?.release();
        return probe !== null;
      },
      ctx.ttlMs * 2 + ctx.capabilities.minTtlMs + 2_000,
    );
    assert(gone, 'the first lease never expired');
    const fresh = await client.acquire('k', { ttlMs: 30_000, autoRenew: false, owner, waitMs: 5_000 });
    const renewed = await rejection(old.renew());
    assert(renewed instanceof LockLostError, `renew of the expired handle gave ${String(renewed)}, not LockLostError`);
    await old.release().catch(() => undefined);
    assert(fresh.held, 'the newer hold says it is not held after the old handle was released');
    assert((await other.tryAcquire('k')) === null, 'releasing the expired handle freed the same owner\u2019s newer hold');
    await fresh.renew();
    await fresh.release();
  },
};

export const heldAfterPause: ConformanceCase = {
  title: 'held and signal say lost at once after a pause past the ttl (no timer has run)',
  requires: needsTtl,
  async run(ctx) {
    const lock = await ctx.client().acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    assert(lock.held, 'not held right after acquire');
    // A blocked event loop (GC pause, sync work): timers cannot fire, only the clock moves.
    const until = Date.now() + ctx.ttlMs + 20;
    while (Date.now() < until) {
      // busy: no timer, no I/O
    }
    assert(!lock.held, `lock.held is still true ${ctx.ttlMs + 20} ms into a ${ctx.ttlMs} ms lease`);
    assert(lock.signal.aborted, 'lock.signal has not aborted after the lease ran out');
    await lock.release().catch(() => undefined);
  },
};

export const savedSignalsAfterPause: ConformanceCase = {
  title: "signals saved before a pause past the ttl (a lock's, acquireAll's) read aborted at once, and assertHeld throws",
  requires: needsTtl,
  async run(ctx) {
    const client = ctx.client();
    const lock = await client.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    const multi =
      ctx.capabilities.multi === 'none' ? undefined : await client.acquireAll(['m1', 'm2'], { ttlMs: ctx.ttlMs, autoRenew: false });
    // What a caller keeps: the signal objects, read again after the pause (not lock.signal anew).
    const [signal, multiSignal] = [lock.signal, multi?.signal];
    assert(!isAborted(signal) && !isAborted(multiSignal), 'a signal is aborted right after acquire');
    const until = Date.now() + ctx.ttlMs + 20;
    while (Date.now() < until) {
      // busy: no timer, no I/O
    }
    assert(isAborted(signal), `a saved lock.signal still reads aborted=false ${ctx.ttlMs + 20} ms into a ${ctx.ttlMs} ms lease`);
    assert(signal.reason instanceof LockLostError, `the saved signal's reason is ${String(signal.reason)}, not LockLostError`);
    assert(rejectionOf(() => lock.assertHeld()) instanceof LockLostError, 'lock.assertHeld() did not throw LockLostError');
    if (multi !== undefined) {
      assert(isAborted(multiSignal), "acquireAll's saved signal still reads aborted=false after the pause");
      assert(rejectionOf(() => multi.assertHeld()) instanceof LockLostError, 'multi.assertHeld() did not throw LockLostError');
    }
    await lock.release().catch(() => undefined);
    await multi?.release().catch(() => undefined);
  },
};

/** A read of the signal's state (a function, so the compiler does not carry one read over to the next). */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** What a synchronous call throws, or undefined. */
function rejectionOf(call: () => void): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  return undefined;
}

export const batchRenewal: ConformanceCase = {
  title: 'three locks of one client, auto-renewed together, all stay held past 3x ttl',
  requires: needsTtl,
  async run(ctx) {
    const [holder, contender] = [ctx.client(), ctx.client()];
    const keys = ['b1', 'b2', 'b3'];
    // A wait, so that a slow answer (redlock's node timeout is a fifth of the ttl) is retried, not fatal.
    const locks = await Promise.all(keys.map((key) => holder.acquire(key, { ttlMs: ctx.ttlMs, autoRenew: true, waitMs: 5_000 })));
    const outcomes = await Promise.all(keys.map((key) => rejection(contender.acquire(key, { waitMs: ctx.ttlMs * 3 }))));
    outcomes.forEach((error, i) =>
      assert(error instanceof LockTimeoutError, `contender on ${keys[i]} got ${String(error)} instead of LockTimeoutError`),
    );
    locks.forEach((lock) => assert(lock.held, `${lock.key} not held after 3x ttl`));
    await Promise.all(locks.map((lock) => lock.release()));
  },
};

export const leaseEdgeCases: readonly ConformanceCase[] = [
  fractionalExpiry,
  fencesAcrossExpiry,
  staleHandleSameOwner,
  heldAfterPause,
  savedSignalsAfterPause,
  batchRenewal,
];
