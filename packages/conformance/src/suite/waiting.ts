import { LockTimeoutError, type LockClient } from '@deadbolt/core';
import type { ConformanceCase } from './context.js';
import { assert, rejection, within } from './util.js';

/** Resolves on the client's first 'contended' event: the waiter has found the key busy. */
function contention(client: LockClient): Promise<void> {
  return new Promise((resolve) => {
    client.once('contended', () => resolve());
  });
}

export const waitHonoured: ConformanceCase = {
  title: 'waitMs is honoured: LockTimeoutError between waitMs and waitMs + 1000 ms',
  async run(ctx) {
    const [holder, waiter] = [ctx.client(), ctx.client()];
    const lock = await holder.acquire('k', { ttlMs: 30_000 });
    const waitMs = 500;
    const start = Date.now();
    const error = await rejection(waiter.acquire('k', { waitMs }));
    const took = Date.now() - start;
    assert(error instanceof LockTimeoutError, `expected LockTimeoutError, got ${String(error)}`);
    assert(took >= waitMs - 5 && took <= waitMs + 1_000, `timed out after ${took} ms for waitMs ${waitMs}`);
    await lock.release();
  },
};

export const handOff: ConformanceCase = {
  title: 'a waiter wakes promptly after release (hand-off latency bound)',
  async run(ctx) {
    const [holder, waiter] = [ctx.client(), ctx.client()];
    const lock = await holder.acquire('k', { ttlMs: 30_000 });
    // Release once the waiter has seen the key busy ('contended'): from then on it must not sleep
    // through a release it could be told about (DESIGN.md, Waiting).
    const contended = contention(waiter);
    const waiting = waiter.acquire('k', { waitMs: 30_000 });
    await within(contended, 10_000, 'the waiter reporting contention');
    const released = Date.now();
    await lock.release();
    const next = await waiting;
    const latency = Date.now() - released;
    console.info(`[deadbolt conformance] ${ctx.name}: hand-off latency ${latency} ms (bound ${ctx.handOffBoundMs} ms)`);
    assert(latency < ctx.handOffBoundMs, `hand-off took ${latency} ms, bound ${ctx.handOffBoundMs} ms`);
    await next.release();
  },
};

export const abortMidWait: ConformanceCase = {
  title: 'abort mid-wait rejects promptly (< 500 ms) and leaves nothing behind',
  async run(ctx) {
    const [holder, waiter, third] = [ctx.client(), ctx.client(), ctx.client()];
    const lock = await holder.acquire('k', { ttlMs: 30_000 });
    const controller = new AbortController();
    const contended = contention(waiter);
    const waiting = waiter.acquire('k', { waitMs: 30_000, signal: controller.signal });
    await within(contended, 10_000, 'the waiter reporting contention');
    const start = Date.now();
    controller.abort(new Error('test abort'));
    await within(rejection(waiting), 5_000, 'aborted acquire');
    const took = Date.now() - start;
    assert(took < 500, `abort took ${took} ms`);
    await lock.release();
    const next = await third.tryAcquire('k');
    assert(next !== null, 'after the abort and the release the key is still busy: the aborted waiter left a lock behind');
    assert(waiter.heldCount === 0, 'the aborted client holds a lock');
    await next.release();
  },
};

export const independentKeys: ConformanceCase = {
  title: 'independent keys never block each other',
  async run(ctx) {
    const [a, b] = [ctx.client(), ctx.client()];
    const locks = await Promise.all([a.acquire('k1', { waitMs: 0 }), b.acquire('k2', { waitMs: 0 })]);
    const more = await within(Promise.all([a.tryAcquire('k3'), b.tryAcquire('k4')]), 5_000, 'acquire of free keys');
    assert(
      more.every((lock) => lock !== null),
      'a free key was busy',
    );
    await Promise.all([...locks, ...more].map((lock) => lock?.release()));
  },
};

export const manyWaiters: ConformanceCase = {
  title: '50 waiters (in 5 clients) on one key are each served exactly once',
  async run(ctx) {
    const clients = Array.from({ length: 5 }, () => ctx.client());
    const served = new Map<number, number>();
    let inside = 0;
    let overlaps = 0;
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        clients[i % 5]!.withLock(
          'k',
          async () => {
            inside += 1;
            if (inside > 1) overlaps += 1;
            served.set(i, (served.get(i) ?? 0) + 1);
            await new Promise((resolve) => setImmediate(resolve));
            inside -= 1;
          },
          { waitMs: 55_000, ttlMs: Math.max(ctx.ttlMs, 5_000) },
        ),
      ),
    );
    assert(
      served.size === 50 && [...served.values()].every((n) => n === 1),
      `served: ${served.size} waiters, counts ${[...served.values()].join(',')}`,
    );
    assert(overlaps === 0, `${overlaps} overlaps among waiters`);
  },
};

export const waitingCases: readonly ConformanceCase[] = [waitHonoured, handOff, abortMidWait, independentKeys, manyWaiters];
