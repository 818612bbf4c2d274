import { InvalidArgumentError, type Lock, type LockClient } from '@deadbolt/core';
import { type ConformanceCase, type ResolvedOptions, needsTtl } from './context.js';
import { permitFencesAfterIdle } from './kind-fences.js';
import { crashedHold, delay, needsCrash, Occupancy, type Pending, queued } from './primitives-util.js';
import { chaos } from './read-write.js';
import { assert, within } from './util.js';

/**
 * Counting semaphores (capabilities.semaphore): the limit holds, is reachable, a release admits
 * exactly one waiter, a crash returns its permit, and aborts leave nothing behind.
 */
const needsSemaphore = (o: ResolvedOptions): string | undefined =>
  o.capabilities.semaphore === true ? undefined : 'capabilities.semaphore is not true';
const both =
  (...checks: ((o: ResolvedOptions) => string | undefined)[]) =>
  (o: ResolvedOptions) =>
    checks.map((check) => check(o)).find((reason) => reason !== undefined);

const KEY = 'sem';
const PERMITS = 3;
const sem = (client: LockClient) => client.semaphore(KEY, { permits: PERMITS });
const WAIT_MS = 20_000;

export const allPermitsAtOnce: ConformanceCase = {
  title: `semaphore: all ${PERMITS} permits are held at once in separate clients, one more is refused until a release`,
  requires: needsSemaphore,
  async run(ctx) {
    const clients = Array.from({ length: PERMITS + 1 }, () => ctx.client());
    const held: (Lock | null)[] = [];
    for (const client of clients.slice(0, PERMITS)) held.push(await sem(client).tryAcquire());
    assert(
      held.every((lock) => lock !== null),
      `only ${held.filter(Boolean).length} of ${PERMITS} permits could be held at once`,
    );
    const extra = clients[PERMITS]!;
    assert((await sem(extra).tryAcquire()) === null, `a permit beyond ${PERMITS} was granted`);
    await held[0]!.release();
    const after = await sem(extra).tryAcquire();
    assert(after !== null, 'a released permit could not be taken again');
    await Promise.all([after, ...held.slice(1)].map((lock) => lock!.release()));
  },
};

export const neverMoreThanPermits: ConformanceCase = {
  title: `semaphore: 8 workers in 4 clients never exceed ${PERMITS} holders (interval checker)`,
  requires: needsSemaphore,
  async run(ctx) {
    const occupancy = new Occupancy(PERMITS);
    const clients = Array.from({ length: 4 }, () => ctx.client());
    await Promise.all(
      Array.from({ length: 8 }, async (_, worker) => {
        for (let round = 0; round < 4; round += 1) {
          await sem(clients[worker % clients.length]!).withLock(
            async () => {
              occupancy.enter('permit');
              await delay(5);
              occupancy.leave('permit');
            },
            { waitMs: 50_000 },
          );
        }
      }),
    );
    assert(occupancy.violations.length === 0, occupancy.violations.slice(0, 3).join('; '));
  },
};

export const oneReleaseOneWaiter: ConformanceCase = {
  title: 'semaphore: with every permit held and 3 waiters queued, one release admits exactly one waiter',
  requires: needsSemaphore,
  async run(ctx) {
    const holders = await Promise.all(Array.from({ length: PERMITS }, () => sem(ctx.client()).acquire()));
    const waiters = [];
    for (let i = 0; i < 3; i += 1) {
      const client = ctx.client();
      waiters.push(await queued(client, () => sem(client).acquire({ waitMs: WAIT_MS })));
    }
    // A window, not a sleep: no waiter may get a permit while all are held, and whatever a waiter
    // does once after queueing (redis fair re-checks its queue entry when its grant channel goes
    // live, and that re-check grants whoever fits) is done before the release, so only the release
    // can admit the next one (a late re-check hid a release that woke nobody in a CI run).
    await delay(ctx.handOffBoundMs * 2);
    assert(!waiters.some((waiter) => waiter.settled()), 'a waiter got a permit while all were held');
    await holders[0]!.release();
    await within(Promise.race(waiters.map((waiter) => waiter.promise)), ctx.handOffBoundMs * 4, 'a waiter after one permit was released');
    await delay(ctx.handOffBoundMs);
    const admitted = waiters.filter((waiter) => waiter.settled()).length;
    assert(admitted === 1, `one release admitted ${admitted} waiters`);
    await holders[1]!.release();
    await within(
      (async () => {
        while (waiters.filter((waiter) => waiter.settled()).length < 2)
          await Promise.race(waiters.filter((waiter) => !waiter.settled()).map((waiter) => waiter.promise));
      })(),
      ctx.handOffBoundMs * 4,
      'a second waiter after a second release',
    );
    const granted = await Promise.all(waiters.filter((waiter) => waiter.settled()).map((waiter) => waiter.promise));
    await Promise.all([...granted, holders[2]!].map((lock) => lock.release()));
    const last = await within(
      waiters.find((waiter) => !granted.includes(waiter.lock()!))!.promise,
      ctx.handOffBoundMs * 4,
      'the last waiter',
    );
    await last.release();
  },
};

export const crashedPermitReturns: ConformanceCase = {
  title: "semaphore: a crashed holder's permit returns within its lease or session, and only that one",
  requires: both(needsSemaphore, needsCrash),
  async run(ctx) {
    const live = await Promise.all(Array.from({ length: PERMITS - 1 }, () => sem(ctx.client()).acquire()));
    const crashed = await crashedHold(ctx, (client, options) => sem(client).acquire(options));
    const waiter = ctx.client();
    const next = await queued(waiter, () => sem(waiter).acquire({ waitMs: WAIT_MS + crashed.freedWithinMs }));
    const started = Date.now();
    const permit = await within(next.promise, crashed.freedWithinMs + ctx.handOffBoundMs * 4, 'the permit of the crashed holder');
    assert(
      live.every((lock) => lock.held),
      `a live holder lost its permit when the crashed one's returned (after ${Date.now() - started} ms)`,
    );
    const extra = await sem(ctx.client()).tryAcquire();
    assert(extra === null, 'more than the crashed permit came back');
    await Promise.all([permit, ...live].map((lock) => lock.release()));
  },
};

export const semaphoreChaos: ConformanceCase = {
  title: 'semaphore: random aborts, timeouts and crashes leave no holder and no queue entry behind',
  requires: needsSemaphore,
  async run(ctx) {
    await chaos(ctx, 'semaphore', PERMITS);
  },
};

const needsPermitsRecorded = (o: ResolvedOptions): string | undefined =>
  o.permitsRecorded === true ? undefined : 'the adapter does not record permits (options.permitsRecorded)';

/** What an acquire settled with: its lock (released at once) or its error. */
async function outcomeOf(acquiring: Promise<Lock | null>): Promise<unknown> {
  try {
    const lock = await acquiring;
    await lock?.release();
    return lock === null ? 'refused as busy (null)' : 'granted';
  } catch (error) {
    return error;
  }
}

export const permitsMismatchRefused: ConformanceCase = {
  title:
    'semaphore: another client passing other permits for a semaphore in use gets InvalidArgumentError (tryAcquire and acquire); the same permits still work',
  requires: both(needsSemaphore, needsPermitsRecorded),
  async run(ctx) {
    const [holder, other] = [ctx.client(), ctx.client()];
    const held = await sem(holder).acquire({ waitMs: WAIT_MS });
    try {
      for (const [how, outcome] of [
        ['tryAcquire with more permits', await outcomeOf(other.semaphore(KEY, { permits: PERMITS + 2 }).tryAcquire())],
        ['acquire with fewer permits', await outcomeOf(other.semaphore(KEY, { permits: PERMITS - 1 }).acquire({ waitMs: 2_000 }))],
      ] as const) {
        assert(outcome instanceof InvalidArgumentError, `${how}: expected InvalidArgumentError, got ${String(outcome)}`);
      }
      const same = await sem(other).tryAcquire();
      assert(same !== null, 'the same permits were refused after the mismatches');
      await same.release();
    } finally {
      await held.release();
    }
  },
};

export const permitRenewKeeps: ConformanceCase = {
  title: 'semaphore: renewing a permit (short ttl, no auto-renew) past its ttl keeps it: the last permit stays taken',
  requires: both(needsSemaphore, needsTtl),
  async run(ctx) {
    const ttlMs = Math.max(ctx.ttlMs, 600);
    const permit = await sem(ctx.client()).acquire({ ttlMs, autoRenew: false, waitMs: WAIT_MS });
    const renewFor = async (ms: number): Promise<void> => {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        await delay(ttlMs / 4);
        await permit.renew();
      }
    };
    const lastTaken = async (when: string): Promise<void> => {
      assert(permit.held && !permit.signal.aborted, `the renewed permit reports lost ${when}`);
      const extra = await sem(ctx.client()).tryAcquire();
      await extra?.release();
      assert(extra === null, `another client took the renewed permit ${when}: its renewals did not extend its ${ttlMs} ms ttl`);
    };
    // Renewed first while it is the only permit held, then beside the others: a backend may keep a
    // lone hold apart (redis fair keeps it in one expiring key) and move it when others arrive.
    await renewFor(ttlMs * 1.5);
    const others = await Promise.all(Array.from({ length: PERMITS - 1 }, () => sem(ctx.client()).acquire({ waitMs: WAIT_MS })));
    await lastTaken(`${ttlMs * 1.5} ms after a ${ttlMs} ms ttl, renewed alone`);
    await renewFor(ttlMs);
    await lastTaken(`${ttlMs * 2.5} ms after a ${ttlMs} ms ttl, renewed beside ${PERMITS - 1} others`);
    await Promise.all([permit, ...others].map((lock) => lock.release()));
  },
};

const needsFair = (o: ResolvedOptions): string | undefined =>
  o.capabilities.fair === true ? undefined : 'capabilities.fair is not true (no server FIFO to check)';

export const permitsFifo: ConformanceCase = {
  title: 'semaphore: on a fair backend, a freed permit goes to the oldest waiter, then the next to the one after it',
  requires: both(needsSemaphore, needsFair),
  async run(ctx) {
    const holders = await Promise.all(Array.from({ length: PERMITS }, () => sem(ctx.client()).acquire({ waitMs: WAIT_MS })));
    const order: string[] = [];
    const waiters: Pending[] = [];
    for (const name of ['A', 'B']) {
      const client = ctx.client();
      const waiter = await queued(client, () => sem(client).acquire({ waitMs: WAIT_MS }));
      void waiter.promise.then(
        () => order.push(name),
        () => order.push(`${name} failed`),
      );
      waiters.push(waiter);
      // A window, not a sleep: 'contended' can come before the waiter is in the server's queue
      // (PostgreSQL advisory reports it before queueing for the semaphore's gate); B must not start
      // before A is in line.
      await delay(ctx.handOffBoundMs * 2);
    }
    const [a, b] = waiters as [Pending, Pending];
    assert(!a.settled() && !b.settled(), 'a waiter got a permit while all were held');
    await holders[0]!.release();
    await within(Promise.race([a.promise, b.promise]), ctx.handOffBoundMs * 4, 'a waiter after one permit was released');
    assert(order[0] === 'A', `the freed permit went to ${order.join(', ')}: the newer waiter was served before the older one`);
    await holders[1]!.release();
    await within(b.promise, ctx.handOffBoundMs * 4, 'B after a second release');
    assert(order.join(' ') === 'A B', `granted in the order ${order.join(' ')}, expected A B`);
    await Promise.all([holders[2]!, ...(await Promise.all(waiters.map((waiter) => waiter.promise)))].map((lock) => lock.release()));
  },
};

export const semaphoreCases: readonly ConformanceCase[] = [
  allPermitsAtOnce,
  neverMoreThanPermits,
  oneReleaseOneWaiter,
  crashedPermitReturns,
  semaphoreChaos,
  permitsMismatchRefused,
  permitRenewKeeps,
  permitsFifo,
  permitFencesAfterIdle,
];
