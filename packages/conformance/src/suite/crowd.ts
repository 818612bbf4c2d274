import { ClientClosedError, type LockClient } from '@deadbolt/core';
import type { ConformanceCase } from './context.js';
import { assert, rejection, within } from './util.js';

/** Waiting at scale and how a wait ends: many waiters on one key, the abort reason, close(). */

function contention(client: LockClient): Promise<void> {
  return new Promise((resolve) => {
    client.once('contended', () => resolve());
  });
}

export const crowdOnOneKey: ConformanceCase = {
  title: 'many waiters on one key (options.manyWaiters, in 2 clients) are all served within the wait, one at a time',
  async run(ctx) {
    const clients = [ctx.client(), ctx.client()];
    const count = ctx.manyWaiters;
    const waitMs = ctx.manyWaitersWaitMs;
    let served = 0;
    let inside = 0;
    let overlaps = 0;
    const start = Date.now();
    let releaseFailures = 0;
    const outcomes = await Promise.allSettled(
      Array.from({ length: count }, async (_, i) => {
        const lock = await clients[i % 2]!.acquire('k', { waitMs, ttlMs: 30_000 });
        inside += 1;
        if (inside > 1) overlaps += 1;
        served += 1;
        await Promise.resolve(); // yield inside the lock: an overlapping waiter would run here
        inside -= 1;
        // Served is served: a release that fails on a loaded server is reported, and the lease
        // (or the adapter's background delete) still frees the key.
        await lock.release().catch(() => (releaseFailures += 1));
      }),
    );
    const failed = outcomes.filter((outcome) => outcome.status === 'rejected') as PromiseRejectedResult[];
    console.info(
      `[deadbolt conformance] ${ctx.name}: ${count} waiters on one key served in ${Date.now() - start} ms (${releaseFailures} failed releases)`,
    );
    assert(failed.length === 0, `${failed.length} of ${count} waiters failed within ${waitMs} ms, e.g. ${String(failed[0]?.reason)}`);
    assert(served === count, `served ${served} of ${count}`);
    assert(overlaps === 0, `${overlaps} overlaps`);
  },
};

export const waitEndings: ConformanceCase = {
  title: 'an aborted wait rejects with exactly the signal\u2019s reason, and close() ends a wait with ClientClosedError, both promptly',
  async run(ctx) {
    const [holder, waiter, closer] = [ctx.client(), ctx.client(), ctx.client()];
    const lock = await holder.acquire('k', { ttlMs: 30_000 });
    const controller = new AbortController();
    const contended = contention(waiter);
    const waiting = waiter.acquire('k', { waitMs: 30_000, signal: controller.signal });
    await within(contended, 10_000, 'the waiter reporting contention');
    const reason = new Error('the caller gave up');
    let start = Date.now();
    controller.abort(reason);
    const aborted = await within(rejection(waiting), 5_000, 'aborted acquire');
    assert(aborted === reason, `an aborted acquire rejected with ${String(aborted)}, not the signal's reason`);
    assert(Date.now() - start < 1_000, `abort took ${Date.now() - start} ms`);
    const closerContended = contention(closer);
    const closing = closer.acquire('k', { waitMs: 30_000 });
    await within(closerContended, 10_000, 'the second waiter reporting contention');
    start = Date.now();
    const closed = closer.close();
    const ended = await within(rejection(closing), 5_000, 'a wait interrupted by close()');
    assert(ended instanceof ClientClosedError, `close() ended a wait with ${String(ended)}, not ClientClosedError`);
    assert(Date.now() - start < 1_000, `close() took ${Date.now() - start} ms to end the wait`);
    await closed;
    await lock.release();
  },
};

export const crowdCases: readonly ConformanceCase[] = [crowdOnOneKey, waitEndings];
