import { LockTimeoutError, type LockClient } from '@deadbolt/core';
import type { ConformanceCase, ResolvedOptions } from './context.js';
import { assert, rejection, within } from './util.js';

/** Multi-key locks (`acquireAll`): skipped only where a backend declares none. */
export function needsMulti(options: ResolvedOptions): string | undefined {
  return options.capabilities.multi === 'none' ? "capabilities.multi is 'none'" : undefined;
}

function contention(client: LockClient): Promise<void> {
  return new Promise((resolve) => client.once('contended', () => resolve()));
}

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

const STRESS_CLIENTS = 20;
const STRESS_KEYS = 8;
const STRESS_BOUND_MS = 120_000;

/**
 * The deadlock trap of Curator's InterProcessMultiLock and Redisson's MultiLock: clients that list
 * overlapping keys in different orders. With one global order nobody waits in a cycle, so every
 * call succeeds well within its wait; a cycle shows as a LockTimeoutError (or the wall-clock bound).
 */
export const multiNoDeadlock: ConformanceCase = {
  title: `${STRESS_CLIENTS} clients lock random overlapping key sets in random orders: no deadlock, no overlap`,
  requires: needsMulti,
  async run(ctx) {
    const keys = Array.from({ length: STRESS_KEYS }, (_, i) => `m${i}`);
    const inside = new Map<string, number>(keys.map((key) => [key, 0]));
    let overlaps = 0;
    let done = 0;
    const perClient = Math.ceil(ctx.multiStressIterations / STRESS_CLIENTS);
    const clients = Array.from({ length: STRESS_CLIENTS }, () => ctx.client());
    const started = Date.now();
    const stress = Promise.all(
      clients.map(async (client) => {
        for (let i = 0; i < perClient; i += 1) {
          const set = shuffled(keys).slice(0, 2 + Math.floor(Math.random() * 3));
          const all = await client.acquireAll(set, { waitMs: ctx.multiWaitMs, ttlMs: Math.max(ctx.ttlMs, 15_000) });
          for (const key of set) {
            const count = inside.get(key)! + 1;
            if (count > 1) overlaps += 1;
            inside.set(key, count);
          }
          await new Promise((resolve) => setImmediate(resolve)); // a turn of the loop for any overlap to show
          for (const key of set) inside.set(key, inside.get(key)! - 1);
          await all.release();
          done += 1;
        }
      }),
    );
    await within(stress, STRESS_BOUND_MS, `the multi-lock stress (${done} of ${perClient * STRESS_CLIENTS} done)`);
    console.info(`[deadbolt conformance] ${ctx.name}: ${done} acquireAll in ${Date.now() - started} ms`);
    assert(overlaps === 0, `${overlaps} overlapping holds of one key`);
  },
};

export const multiAllOrNothing: ConformanceCase = {
  title: 'a failed acquireAll (one key busy) holds nothing afterwards',
  requires: needsMulti,
  async run(ctx) {
    const [holder, multi, probe] = [ctx.client(), ctx.client(), ctx.client()];
    const busy = await holder.acquire('b', { ttlMs: 30_000 });
    const error = await rejection(multi.acquireAll(['c', 'b', 'a'], { waitMs: 300 }));
    assert(error instanceof LockTimeoutError, `expected LockTimeoutError, got ${String(error)}`);
    assert(multi.heldCount === 0, `the failed acquireAll left ${multi.heldCount} lock(s) in its client`);
    for (const key of ['a', 'c']) {
      const lock = await probe.tryAcquire(key);
      assert(lock !== null, `key "${key}" is still taken after the failed acquireAll`);
      await lock.release();
    }
    await busy.release();
  },
};

export const multiExcludesSingle: ConformanceCase = {
  title: 'acquireAll and single-key locks exclude each other per key; fences per key',
  requires: needsMulti,
  async run(ctx) {
    const [multi, single, other] = [ctx.client(), ctx.client(), ctx.client()];
    const all = await multi.acquireAll(['x', 'y'], { ttlMs: 30_000 });
    assert(all.held && all.keys.length === 2, 'acquireAll did not report two held keys');
    if (ctx.capabilities.fencing)
      assert(typeof all.fences.get('x') === 'number' && typeof all.fences.get('y') === 'number', 'a fenced backend gave no fence per key');
    for (const key of ['x', 'y']) assert((await single.tryAcquire(key)) === null, `a single-key lock took "${key}" from a multi-lock`);
    const z = await single.acquire('z', { ttlMs: 30_000 });
    const error = await rejection(other.acquireAll(['w', 'z'], { waitMs: 300 }));
    assert(error instanceof LockTimeoutError, `acquireAll took "z" from a single-key holder (got ${String(error)})`);
    await all.release();
    assert(!all.held, 'the multi-lock still reports held after release');
    const x = await single.tryAcquire('x');
    assert(x !== null, '"x" is still taken after the multi-lock was released');
    await Promise.all([x.release(), z.release()]);
  },
};

export const multiAbortMidWay: ConformanceCase = {
  title: 'acquireAll aborted mid-way rejects promptly and holds nothing afterwards',
  requires: needsMulti,
  async run(ctx) {
    const [holder, waiter, probe] = [ctx.client(), ctx.client(), ctx.client()];
    const busy = await holder.acquire('c', { ttlMs: 30_000 });
    const controller = new AbortController();
    const contended = contention(waiter);
    const pending = waiter.acquireAll(['c', 'a', 'b'], { waitMs: 30_000, signal: controller.signal });
    await within(contended, 10_000, 'the acquireAll reporting contention');
    const start = Date.now();
    controller.abort(new Error('test abort'));
    const error = await within(rejection(pending), 5_000, 'the aborted acquireAll');
    const took = Date.now() - start;
    assert(!(error instanceof LockTimeoutError), `expected the abort, got ${String(error)}`);
    assert(took < 1_000, `abort took ${took} ms`);
    assert(waiter.heldCount === 0, `the aborted acquireAll left ${waiter.heldCount} lock(s) in its client`);
    const rest = await probe.acquireAll(['a', 'b'], { waitMs: 0 }).catch((e: unknown) => e);
    assert(!(rest instanceof Error), `keys "a"/"b" still taken after the abort: ${String(rest)}`);
    await (rest as { release(): Promise<void> }).release();
    await busy.release();
  },
};

/**
 * A multi-lock's grants and single-key grants of the same keys draw on the same per-key fences:
 * each key's fences strictly increase whichever way it was taken. A key's fence may jump (ZooKeeper
 * and PostgreSQL count all keys on one counter, which keeps every key increasing); what must not
 * happen is a multi-lock that fences all its keys from one key's counter (or one of its own) while
 * single grants count per key: a key then goes back to a smaller fence when taken alone.
 */
export const multiFencesPerKey: ConformanceCase = {
  title: "acquireAll and single-key grants of the same keys: each key's fences strictly increase across both",
  requires: (o) => needsMulti(o) ?? (o.capabilities.fencing ? undefined : 'capabilities.fencing is false'),
  async run(ctx) {
    const client = ctx.client();
    const seen = new Map<string, number[]>([
      ['a', []],
      ['b', []],
    ]);
    const note = (key: string, fence: number | undefined, how: string): void => {
      assert(typeof fence === 'number', `${how} of "${key}": a fenced backend gave no fence`);
      seen.get(key)!.push(fence);
    };
    const alone = async (key: string, times: number): Promise<void> => {
      for (let i = 0; i < times; i += 1) {
        const lock = await client.acquire(key, { ttlMs: 30_000 });
        note(key, lock.fence, 'a single grant');
        await lock.release();
      }
    };
    const together = async (keys: string[]): Promise<void> => {
      const all = await client.acquireAll(keys, { ttlMs: 30_000 });
      for (const key of keys) note(key, all.fences.get(key), 'acquireAll');
      await all.release();
    };
    // Unequal counts before and after, so that whichever counter a broken multi-lock shares, one
    // key's next single grant falls below (or on) the fence the multi-lock gave it.
    await alone('a', 3);
    await alone('b', 1);
    await together(['a', 'b']);
    await alone('b', 1);
    await alone('a', 1);
    await together(['b', 'a']);
    await alone('a', 1);
    await alone('b', 1);
    for (const [key, fences] of seen) {
      const backwards = fences.findIndex((fence, i) => i > 0 && fence <= fences[i - 1]!);
      assert(backwards < 0, `"${key}" fences not strictly increasing across single and multi grants: ${fences.join(', ')}`);
    }
  },
};

export const multiCases: readonly ConformanceCase[] = [
  multiNoDeadlock,
  multiAllOrNothing,
  multiExcludesSingle,
  multiAbortMidWay,
  multiFencesPerKey,
];
