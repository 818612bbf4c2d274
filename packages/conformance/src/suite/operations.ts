import { ForcedReleaseError, LockLostError, type LeaderChange, type LockClient, type LockInspection } from '@deadbolt/core';
import type { ConformanceCase, ResolvedOptions } from './context.js';
import { aborted, assert, within } from './util.js';

/**
 * The operator API (capabilities.operations): inspect shows who holds a key and how long is
 * left, forceRelease takes it back and tells the holder, list enumerates under a prefix, and an
 * election's observe() follows the leader. Each case runs where the operation it needs is declared
 * (`operations: true` declares all three, a list only those it names).
 */
type Operation = 'inspect' | 'forceRelease' | 'list';

/** Whether the capabilities declare `operation`. */
const declares = (o: ResolvedOptions, operation: Operation): boolean => {
  const declared = o.capabilities.operations;
  return declared === true || (Array.isArray(declared) && declared.includes(operation));
};
const needs =
  (operation: Operation) =>
  (o: ResolvedOptions): string | undefined =>
    declares(o, operation) ? undefined : `capabilities.operations does not include '${operation}'`;
const needsOperations = needs('inspect');
const needsAlso =
  (capability: 'semaphore' | 'readWrite' | 'election') =>
  (o: ResolvedOptions): string | undefined =>
    needsOperations(o) ?? (o.capabilities[capability] === true ? undefined : `capabilities.${capability} is not true`);

const describeHolders = (seen: LockInspection): string => JSON.stringify(seen.holders);

export const opsInspectHolder: ConformanceCase = {
  title:
    'operations: inspect shows the holder (owner where stored, fence, ttlLeftMs within (0, ttl] in ms; for a session hold, what the session has left) and held false after release',
  requires: needsOperations,
  async run(ctx) {
    const ttlMs = Math.max(ctx.ttlMs, 2_000);
    const holder = ctx.client();
    const operator = ctx.client();
    const sentAt = Date.now();
    const lock = await holder.acquire('inspected', { ttlMs, autoRenew: false });
    const seen = await operator.inspect('inspected');
    // The lease cannot have run down by more than the time since the acquire was sent (100 ms for clocks).
    const floorMs = ttlMs - (Date.now() - sentAt) - 100;
    assert(seen.key === 'inspected', `inspect named the key ${JSON.stringify(seen.key)}`);
    assert(seen.held && seen.holders.length === 1, `inspect of a held key: held ${seen.held}, holders ${describeHolders(seen)}`);
    const [hold] = seen.holders;
    assert(hold!.kind === 'mutex', `the plain lock was reported as kind ${hold!.kind}`);
    assert(hold!.owner === undefined || hold!.owner === lock.owner, `inspect named owner ${hold!.owner}, the holder is ${lock.owner}`);
    // A backend answering only part of the operator API may not store the fence per key (PostgreSQL
    // advisory: the fence is a sequence value the server does not keep): absent there, never wrong.
    const fenceMayBeAbsent = ctx.capabilities.operations !== true && hold!.fence === undefined;
    if (ctx.capabilities.fencing && !fenceMayBeAbsent)
      assert(hold!.fence === lock.fence, `inspect reported fence ${hold!.fence}, the lock has ${lock.fence}`);
    const left = hold!.ttlLeftMs;
    if (ctx.capabilities.lease === 'session') {
      // A session hold lasts as long as its holder's session: absent where only the server times it
      // (ZooKeeper), else what is left of the session's lease (etcd), which the lock's ttl does not set.
      assert(left === undefined || left > 0, `inspect reported ttlLeftMs ${left} for a held session hold`);
    } else {
      assert(
        left !== undefined && left > 0 && left <= ttlMs && left >= floorMs,
        `inspect reported ttlLeftMs ${left}; expected within (0, ${ttlMs}] and at least ${floorMs} (ms since the acquire)`,
      );
    }
    await lock.release();
    const after = await operator.inspect('inspected');
    assert(!after.held && after.holders.length === 0, `after release inspect still shows ${describeHolders(after)}`);
  },
};

export const opsInspectPermits: ConformanceCase = {
  title: "operations: a semaphore with 2 permits held shows 2 holders of kind 'permit'",
  requires: needsAlso('semaphore'),
  async run(ctx) {
    const [a, b, operator] = [ctx.client(), ctx.client(), ctx.client()];
    const first = await a.semaphore('permits', { permits: 3 }).acquire();
    const second = await b.semaphore('permits', { permits: 3 }).acquire();
    const seen = await operator.inspect('permits');
    const permits = seen.holders.filter((hold) => hold.kind === 'permit');
    assert(seen.held && permits.length === 2, `2 permits held, inspect shows ${describeHolders(seen)}`);
    await Promise.all([first.release(), second.release()]);
  },
};

export const opsInspectReaders: ConformanceCase = {
  title: "operations: a read-write lock with 2 readers shows 2 holders of kind 'read'",
  requires: needsAlso('readWrite'),
  async run(ctx) {
    const [a, b, operator] = [ctx.client(), ctx.client(), ctx.client()];
    const first = await a.readWriteLock('shared').read.acquire();
    const second = await b.readWriteLock('shared').read.acquire();
    const seen = await operator.inspect('shared');
    const readers = seen.holders.filter((hold) => hold.kind === 'read');
    assert(seen.held && readers.length === 2, `2 readers, inspect shows ${describeHolders(seen)}`);
    await Promise.all([first.release(), second.release()]);
  },
};

export const opsForceRelease: ConformanceCase = {
  title: 'operations: forceRelease frees the key for another client at once, is false on a free key, and the holder loses it as forced',
  requires: needs('forceRelease'),
  async run(ctx) {
    const ttlMs = Math.max(ctx.ttlMs, 1_500);
    const [holder, operator, next] = [ctx.client(), ctx.client(), ctx.client()];
    const lock = await holder.acquire('stuck', { ttlMs: ttlMs, autoRenew: true });
    const forced: { key: string; released: boolean }[] = [];
    operator.on('forced', (event) => forced.push(event));
    assert((await operator.forceRelease('stuck')) === true, 'forceRelease of a held key returned false');
    const taken = await next.tryAcquire('stuck', { ttlMs });
    assert(taken !== null, 'after forceRelease another client could not take the key at once');
    // The holder learns at its next renewal at the latest (a third of the ttl), well within the ttl.
    await aborted(lock.signal, ttlMs + ctx.handOffBoundMs);
    const reason: unknown = lock.signal.reason;
    assert(reason instanceof LockLostError, `the holder's signal aborted with ${String(reason)}, not a LockLostError`);
    assert(
      reason.cause instanceof ForcedReleaseError,
      `the holder's LockLostError does not say it was forced: ${reason.message} (cause ${String(reason.cause)})`,
    );
    await taken.release();
    assert((await operator.forceRelease('stuck')) === false, 'forceRelease of a free key returned true');
    assert(
      forced.length === 2 && forced[0]!.key === 'stuck' && forced[0]!.released && !forced[1]!.released,
      `the 'forced' events were ${JSON.stringify(forced)}`,
    );
    await lock.release().catch(() => undefined);
  },
};

async function listed(client: LockClient, options: { prefix?: string; limit?: number }): Promise<string[]> {
  const keys: string[] = [];
  for await (const seen of client.list(options)) keys.push(seen.key);
  return keys.sort();
}

export const opsList: ConformanceCase = {
  title: 'operations: list finds the held keys under a prefix and no others, and honours limit',
  requires: needs('list'),
  async run(ctx) {
    const [holder, operator] = [ctx.client(), ctx.client()];
    const locks = await Promise.all(['jobs/a', 'jobs/b', 'jobs/c', 'other/x'].map((key) => holder.acquire(key)));
    const jobs = await within(listed(operator, { prefix: 'jobs/' }), 30_000, 'list');
    assert(
      JSON.stringify(jobs) === JSON.stringify(['jobs/a', 'jobs/b', 'jobs/c']),
      `list({ prefix: 'jobs/' }) gave ${JSON.stringify(jobs)}`,
    );
    const limited = await within(listed(operator, { prefix: 'jobs/', limit: 2 }), 30_000, 'list with a limit');
    assert(limited.length === 2, `list({ limit: 2 }) gave ${limited.length} keys`);
    await Promise.all(locks.map((lock) => lock.release()));
  },
};

export const opsObserve: ConformanceCase = {
  title: 'operations: observe yields the new leader after a resign, with an increasing term',
  requires: needsAlso('election'),
  async run(ctx) {
    const [a, b, watcher] = [ctx.client(), ctx.client(), ctx.client()];
    const stop = new AbortController();
    const changes = watcher.elect('observed', { id: 'watcher' }).observe({ signal: stop.signal, intervalMs: 20 })[Symbol.asyncIterator]();
    const until = async (leader: string): Promise<LeaderChange> => {
      for (;;) {
        const next = await within(changes.next(), 10_000, `observe() naming ${leader}`);
        assert(next.done !== true, 'observe() ended while the election went on');
        if (next.value.leader === leader) return next.value;
      }
    };
    try {
      const first = a.elect('observed', { id: 'a' });
      const firstTerm = await within(first[Symbol.asyncIterator]().next(), 10_000, 'a leading');
      const sawA = await until('a');
      assert(!firstTerm.done && sawA.term === firstTerm.value.term, `observe() gave term ${sawA.term} for a`);
      await first.resign();
      const second = b.elect('observed', { id: 'b' });
      await within(second[Symbol.asyncIterator]().next(), 10_000, 'b leading');
      const sawB = await until('b');
      assert(sawB.term !== null && sawA.term !== null && sawB.term > sawA.term, `terms seen: a ${sawA.term}, then b ${sawB.term}`);
      await second.resign();
    } finally {
      stop.abort();
      await changes.return?.();
    }
  },
};

export const operationsCases: readonly ConformanceCase[] = [
  opsInspectHolder,
  opsInspectPermits,
  opsInspectReaders,
  opsForceRelease,
  opsList,
  opsObserve,
];
