import { LockTimeoutError, type Lock, type LockClient } from '@deadbolt/core';
import type { CaseContext, ConformanceCase, FairHooks, ResolvedOptions } from './context.js';
import { aborted, assert, delay, rejection, within } from './util.js';

/**
 * Fair (FIFO) locks (primitives.md section 1.5): grants in arrival order, no barging, nothing left
 * behind by a waiter that gives up at any point, dead waiters and holders and lost grant messages
 * cost bounded time. Each case has a mutant (packages/redis/test/fair-mutants.test.ts) that fails it.
 */

/** Slack over every time bound: timers and a shared, loaded 2-core machine. */
const SLACK_MS = 1_000;
/**
 * Tighter for the re-check: a waiter that only finds its grant when the claim made to it runs out
 * (about a waiter lease, 3x the re-check bound) must fail the case.
 */
const RECHECK_SLACK_MS = 500;

function needsFair(options: ResolvedOptions): string | undefined {
  if (options.capabilities.fair !== true) return 'capabilities.fair is not true';
  if (!options.fair) return 'no fair hooks (options.fair)';
  return undefined;
}

function needsFairAndKill(options: ResolvedOptions): string | undefined {
  return needsFair(options) ?? (options.kill ? undefined : 'no kill hook');
}

function hooks(ctx: CaseContext): FairHooks {
  if (!ctx.fair) throw new Error(`no fair hooks for ${ctx.name}`);
  return ctx.fair;
}

/** Starts `client.acquire(key)` and resolves once the server has queued it ('contended'). */
async function queued(
  client: LockClient,
  key: string,
  options: { waitMs?: number; signal?: AbortSignal; ttlMs?: number } = {},
): Promise<{ lock: Promise<Lock> }> {
  const contended = new Promise<void>((resolve) => client.once('contended', () => resolve()));
  const lock = client.acquire(key, { waitMs: 30_000, ...options });
  lock.catch(() => undefined);
  await within(Promise.race([contended, lock.then(() => undefined)]), 10_000, 'a waiter reporting contention');
  return { lock };
}

export const fifoOrder: ConformanceCase = {
  title: 'fair: waiters are granted in the order they queued, and a releaser that comes back goes last',
  requires: needsFair,
  async run(ctx) {
    const holderClient = ctx.client();
    const holder = await holderClient.acquire('k');
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 5; i += 1) {
      const { lock } = await queued(ctx.client(), 'k');
      waiters.push(
        lock.then(async (held) => {
          order.push(i);
          await held.release();
        }),
      );
    }
    // The first holder queues again behind the five, then lets go of its first hold.
    const { lock: again } = await queued(holderClient, 'k');
    const last = again.then(async (held) => {
      order.push(99);
      await held.release();
    });
    await holder.release();
    await within(Promise.all([...waiters, last]), 20_000, 'the queue draining');
    assert(order.join(',') === '0,1,2,3,4,99', `grant order ${order.join(',')}, expected 0,1,2,3,4,99`);
  },
};

export const noBarging: ConformanceCase = {
  title: 'fair: tryAcquire never barges past a queued waiter, even on a free key',
  requires: needsFairAndKill,
  async run(ctx) {
    const { waiterLeaseMs } = hooks(ctx);
    const [holderClient, waiterClient, other] = [ctx.client(), ctx.client(), ctx.client()];
    const holder = await holderClient.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    await queued(waiterClient, 'k');
    const queuedAt = Date.now();
    // The waiter can no longer take the lock itself, but its place stays valid for its waiter lease.
    await ctx.kill(waiterClient);
    await aborted(holder.signal, ctx.ttlMs * 3 + 5_000); // the holder's lease ran out locally...
    await delay(200); // ...and on the server, whose lease started later: the key is free
    assert(
      Date.now() - queuedAt < waiterLeaseMs - 200,
      `too slow to test inside the waiter lease (${Date.now() - queuedAt} ms of ${waiterLeaseMs})`,
    );
    const barged = await other.tryAcquire('k');
    assert(barged === null, 'tryAcquire took a free key while a live waiter was queued ahead of it');
    // Once the dead waiter's lease (and the claim granted to it) ran out, the key is free again.
    const next = await other.acquire('k', { waitMs: 2 * waiterLeaseMs + SLACK_MS });
    await next.release();
  },
};

export const giveUpLeavesNothing: ConformanceCase = {
  title: 'fair: abort or timeout before queueing, while queued and with a grant in flight leaves nothing behind',
  requires: needsFair,
  async run(ctx) {
    const [holderClient, waiterClient, probe] = [ctx.client(), ctx.client(), ctx.client()];
    const nothingLeft = async (what: string): Promise<void> => {
      const lock = await probe.tryAcquire('k');
      assert(lock !== null, `${what}: the key is not free: an entry or a grant was left behind`);
      await lock.release();
    };
    // 1. Aborted before it could queue.
    let holder = await holderClient.acquire('k');
    const early = new AbortController();
    early.abort(new Error('test abort'));
    await rejection(waiterClient.acquire('k', { signal: early.signal }));
    await holder.release();
    await nothingLeft('abort before queueing');
    // 2. Aborted while queued: the release must not grant the lock to the waiter that left.
    holder = await holderClient.acquire('k');
    const queuedAbort = new AbortController();
    const { lock: abortedWait } = await queued(waiterClient, 'k', { signal: queuedAbort.signal });
    queuedAbort.abort(new Error('test abort'));
    await rejection(abortedWait);
    await holder.release();
    await nothingLeft('abort while queued');
    // 3. Timed out while queued.
    holder = await holderClient.acquire('k');
    const timedOut = await rejection(waiterClient.acquire('k', { waitMs: 300 }));
    assert(timedOut instanceof LockTimeoutError, `expected LockTimeoutError, got ${String(timedOut)}`);
    await holder.release();
    await nothingLeft('timeout while queued');
    // 4. Grant in flight: the release grants the lock to the waiter as it gives up. Whichever
    //    wins, the lock must end up free (passed on or released), never held by a waiter that left.
    for (const abortAfterMs of [0, 0, 1, 2, 5]) {
      holder = await holderClient.acquire('k');
      const racing = new AbortController();
      const { lock } = await queued(waiterClient, 'k', { signal: racing.signal });
      const released = holder.release();
      if (abortAfterMs > 0) await new Promise((resolve) => setTimeout(resolve, abortAfterMs));
      racing.abort(new Error('test abort'));
      await released;
      const outcome = await lock.then(
        (won) => won,
        () => undefined,
      );
      await outcome?.release();
      await nothingLeft(`abort ${abortAfterMs} ms after the release`);
    }
    assert(waiterClient.heldCount === 0, 'the waiter still holds a lock');
  },
};

export const killedWaiterAtHead: ConformanceCase = {
  title: 'fair: a waiter killed at the head of the queue delays the next owner by at most its waiter lease',
  requires: needsFairAndKill,
  async run(ctx) {
    const { waiterLeaseMs } = hooks(ctx);
    const [holderClient, deadClient, nextClient] = [ctx.client(), ctx.client(), ctx.client()];
    const holder = await holderClient.acquire('k');
    await queued(deadClient, 'k');
    const { lock: next } = await queued(nextClient, 'k');
    await ctx.kill(deadClient);
    const killedAt = Date.now();
    await holder.release(); // granted in place to the dead head: it must not idle for the dead one's ttl
    const lock = await within(next, waiterLeaseMs + SLACK_MS + 5_000, 'the next owner');
    const delay = Date.now() - killedAt;
    console.info(
      `[deadbolt conformance] ${ctx.name}: next owner ${delay} ms after the head waiter's kill (bound ${waiterLeaseMs} + ${SLACK_MS} ms)`,
    );
    assert(
      delay <= waiterLeaseMs + SLACK_MS,
      `the next owner waited ${delay} ms after the kill; bound ${waiterLeaseMs} ms + ${SLACK_MS} ms slack`,
    );
    await lock.release();
  },
};

export const lostGrantMessage: ConformanceCase = {
  title: 'fair: a waiter that misses its grant message still gets the lock within its re-check bound',
  requires: needsFair,
  async run(ctx) {
    const { recheckBoundMs } = hooks(ctx);
    const [holderClient, waiterClient] = [ctx.client(), ctx.client()];
    // One hand-off first, so the waiter's grant subscription is live (and then lost) rather than
    // still being set up: a waiter re-checks at once when its subscription comes up.
    const first = await holderClient.acquire('k');
    const { lock: warm } = await queued(waiterClient, 'k');
    await first.release();
    await (await warm).release();
    const holder = await holderClient.acquire('k');
    const { lock } = await queued(waiterClient, 'k');
    await hooks(ctx).loseGrantMessages(waiterClient);
    const releasedAt = Date.now();
    await holder.release();
    const held = await within(lock, recheckBoundMs + RECHECK_SLACK_MS + 5_000, 'the waiter without its message');
    const took = Date.now() - releasedAt;
    console.info(
      `[deadbolt conformance] ${ctx.name}: grant found without its message after ${took} ms (bound ${recheckBoundMs} + ${RECHECK_SLACK_MS} ms)`,
    );
    assert(
      took <= recheckBoundMs + RECHECK_SLACK_MS,
      `found its grant after ${took} ms; bound ${recheckBoundMs} ms + ${RECHECK_SLACK_MS} ms slack`,
    );
    assert(held.held, 'the late-found lock is not held');
    await held.release();
  },
};

export const crashedHolderReplaced: ConformanceCase = {
  title: 'fair: a crashed holder is replaced by the head waiter within ttl + one heartbeat, with no release',
  requires: needsFairAndKill,
  async run(ctx) {
    const { recheckBoundMs } = hooks(ctx);
    const [holderClient, waiterClient] = [ctx.client(), ctx.client()];
    const ttlMs = Math.max(ctx.ttlMs, 500);
    await holderClient.acquire('k', { ttlMs, autoRenew: false });
    const acquiredAt = Date.now();
    const { lock } = await queued(waiterClient, 'k');
    await ctx.kill(holderClient);
    const held = await within(lock, ttlMs + recheckBoundMs + SLACK_MS + 5_000, 'the head waiter');
    const took = Date.now() - acquiredAt;
    console.info(`[deadbolt conformance] ${ctx.name}: crashed holder replaced ${took} ms after its acquire (ttl ${ttlMs} ms)`);
    assert(
      took <= ttlMs + recheckBoundMs + SLACK_MS,
      `the waiter got the lock ${took} ms after the crashed holder's acquire; bound ttl ${ttlMs} + ${recheckBoundMs} + ${SLACK_MS} ms`,
    );
    await held.release();
  },
};

export const fencesAcrossHandOffs: ConformanceCase = {
  title: 'fair: fencing tokens strictly increase across queued hand-offs',
  requires: (options) => needsFair(options) ?? (options.capabilities.fencing ? undefined : 'capabilities.fencing is false'),
  async run(ctx) {
    const holder = await ctx.client().acquire('k');
    const fences: number[] = [holder.fence ?? Number.NaN];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 4; i += 1) {
      const { lock } = await queued(ctx.client(), 'k');
      waiters.push(
        lock.then(async (held) => {
          fences.push(held.fence ?? Number.NaN);
          await held.release();
        }),
      );
    }
    await holder.release();
    await within(Promise.all(waiters), 20_000, 'the queue draining');
    for (let i = 1; i < fences.length; i += 1) {
      assert(fences[i]! > fences[i - 1]!, `fences not strictly increasing in grant order: ${fences.join(', ')}`);
    }
  },
};

/** How many waiter leases the long waiter below waits: past the first, and past a lease renewed once. */
const LONG_WAIT_LEASES = 2.5;

export const longWaiterKeepsPlace: ConformanceCase = {
  title: `fair: a waiter queued for ${LONG_WAIT_LEASES} waiter leases keeps its place (its heartbeat extends it): a later waiter is not served first`,
  requires: needsFair,
  async run(ctx) {
    const { waiterLeaseMs } = hooks(ctx);
    const [holderClient, earlyClient, lateClient] = [ctx.client(), ctx.client(), ctx.client()];
    const holder = await holderClient.acquire('k');
    const order: string[] = [];
    const { lock: early } = await queued(earlyClient, 'k');
    void early.then(
      () => order.push('early'),
      () => undefined,
    );
    // Time passing is the point: a waiter whose heartbeats do not move its queue deadline is
    // dropped (or skipped) one waiter lease after it queued.
    await delay(waiterLeaseMs * LONG_WAIT_LEASES);
    assert(order.length === 0 && holder.held, 'the holder lost the lock, or a waiter got it, while the holder held it');
    const { lock: late } = await queued(lateClient, 'k');
    void late.then(
      () => order.push('late'),
      () => undefined,
    );
    await holder.release();
    const first = await within(Promise.race([early, late]), waiterLeaseMs + SLACK_MS + 5_000, 'the first waiter after the release');
    assert(
      order[0] === 'early',
      `the waiter queued ${waiterLeaseMs * LONG_WAIT_LEASES} ms before the release was passed over: ${order.join(', ')} got the lock first`,
    );
    await first.release();
    await (await within(late, waiterLeaseMs + SLACK_MS + 5_000, 'the later waiter')).release();
  },
};

export const fairCases: readonly ConformanceCase[] = [
  fifoOrder,
  noBarging,
  giveUpLeavesNothing,
  killedWaiterAtHead,
  lostGrantMessage,
  crashedHolderReplaced,
  fencesAcrossHandOffs,
  longWaiterKeepsPlace,
];
