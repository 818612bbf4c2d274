// Test-only broken read-write locks and semaphores: each new suite case must fail on one of them.
import { createLockClient, UnsupportedOperationError, type LockClient } from '@deadbolt/core';
import {
  MemoryBackend,
  memoryCapabilities,
  memoryStore,
  QueuedLocks,
  type AcquireRequest,
  type Grant,
  type LockKind,
  type QueuedGrant,
  type QueuedLockEntry as Entry,
} from '@deadbolt/core/adapter';

import { describe, expect, it } from 'vitest';
import {
  allPermitsAtOnce,
  crashedPermitReturns,
  crashedReader,
  downgrade,
  fifoAcrossModes,
  neverMoreThanPermits,
  noWriterStarvation,
  oneReleaseOneWaiter,
  permitFencesAfterIdle,
  permitRenewKeeps,
  permitsFifo,
  permitsMismatchRefused,
  queuedReadersTogether,
  readFencesAfterIdle,
  readersShare,
  readWriteChaos,
  runCase,
  semaphoreChaos,
  unsupportedPrimitive,
  upgradeRefused,
  writersExclude,
  type ConformanceCase,
} from '../src/index.js';

type Request = AcquireRequest & { readonly kind: LockKind };

/** A writer is admitted beside readers (only another writer keeps it out). */
class WriteIgnoresReaders extends QueuedLocks {
  protected override fits(entry: Entry, kind: LockKind): boolean {
    if (kind.type === 'write') return ![...entry.holders.values()].some((holder) => holder.mode === 'write');
    return super.fits(entry, kind);
  }
}

/** Redisson's RReadWriteLock: a reader gets in whenever no writer holds, past queued writers. */
class ReadersBarge extends QueuedLocks {
  override tryAcquire(request: Request, now: number): { grant: Grant } | { retryAfterMs: number } {
    if (request.kind.type === 'read') {
      const entry = this.entryFor(request);
      this.expire(entry, now);
      if (this.fits(entry, request.kind)) return { grant: this.grantTo(entry, request, now) };
    }
    return super.tryAcquire(request, now);
  }
}

/** A release wakes only the head waiter, even when the readers behind it could share. */
class OneAdmittedPerRelease extends QueuedLocks {
  protected override pump(entry: Entry, now: number): void {
    this.expire(entry, now);
    const head = entry.queue[0];
    if (head && this.fits(entry, head.request.kind)) {
      entry.queue.shift();
      head.admit(this.grantTo(entry, head.request, now));
    }
  }
}

/** The downgrade is an ordinary read: it queues behind a waiting writer (CURATOR-276, before the fix). */
class DowngradeQueues extends QueuedLocks {
  override tryAcquire(request: Request, now: number) {
    return super.tryAcquire(plainRead(request), now);
  }
  override acquire(request: Request, deadline: number, signal: AbortSignal) {
    return super.acquire(plainRead(request), deadline, signal);
  }
}
const plainRead = (request: Request): Request => (request.kind.type === 'read' ? { ...request, kind: { type: 'read' } } : request);

/** A hold the server never expires (Redisson's RSemaphore: a crashed holder's permit is gone for good). */
class HoldsNeverExpire extends QueuedLocks {
  protected override expire(): void {}
}

/** Admits one holder more than the semaphore's size. */
class PermitOffByOne extends QueuedLocks {
  protected override fits(entry: Entry, kind: LockKind): boolean {
    if (kind.type === 'permit') return entry.holders.size <= kind.permits;
    return super.fits(entry, kind);
  }
}

/** A release frees the permit but wakes nobody: waiters sit until their deadline. */
class ReleaseWakesNobody extends QueuedLocks {
  override release(grant: QueuedGrant): boolean {
    const entry = (this as unknown as { entries: Map<string, Entry> }).entries.get(grant.entry);
    return entry?.holders.delete(grant.token) ?? false;
  }
}

/** A release admits two waiters when one permit came free. */
class ReleaseAdmitsTwo extends QueuedLocks {
  protected override pump(entry: Entry, now: number): void {
    this.expire(entry, now);
    const fitting = entry.queue[0] && this.fits(entry, entry.queue[0].request.kind);
    for (const waiter of entry.queue.splice(0, fitting ? 2 : 0)) waiter.admit(this.grantTo(entry, waiter.request, now));
  }
}

/** A waiter that gives up stays in the queue (Curator's orphaned lease nodes, CURATOR-315/462). */
class AbortedWaiterStays extends QueuedLocks {
  protected override leave(): void {}
}

/** A semaphore that does not record its permits: each client runs with its own number (Curator, redis-semaphore). */
class PermitsNotRecorded extends QueuedLocks {
  protected override entryFor(request: Request): Entry {
    const existing = (this as unknown as { entries: Map<string, Entry> }).entries.get(`semaphore\u0000${request.key}`);
    if (request.kind.type === 'permit' && existing !== undefined) return existing;
    return super.entryFor(request);
  }
}

/** Fences counted in the key's entry, which goes when the key is idle: they start again at 1. */
class FenceRestartsWhenIdle extends QueuedLocks {
  private readonly counters = new WeakMap<Entry, number>();
  protected override grantTo(entry: Entry, request: Request, now: number): QueuedGrant {
    const fence = (this.counters.get(entry) ?? 0) + 1;
    this.counters.set(entry, fence);
    return { ...super.grantTo(entry, request, now), fence };
  }
}

/** A renewal that finds the hold and says yes, but leaves its lease end where it was. */
class RenewKeepsLeaseEnd extends QueuedLocks {
  override renew(grant: QueuedGrant, _ttlMs: number, now: number): boolean {
    const entry = (this as unknown as { entries: Map<string, Entry> }).entries.get(grant.entry);
    if (!entry) return false;
    this.expire(entry, now);
    return entry.holders.has(grant.token);
  }
}

/** A freed permit (or any room) goes to the newest waiter: a stack, not a queue. */
class NewestWaiterFirst extends QueuedLocks {
  protected override pump(entry: Entry, now: number): void {
    this.expire(entry, now);
    for (let newest = entry.queue.at(-1); newest && this.fits(entry, newest.request.kind); newest = entry.queue.at(-1)) {
      entry.queue.pop();
      newest.admit(this.grantTo(entry, newest.request, now));
    }
  }
}

type Mutant = new (nextFence: (id: string) => number) => QueuedLocks;

const mutants: [string, Mutant, ConformanceCase[]][] = [
  ['a writer admitted beside readers', WriteIgnoresReaders, [readersShare, writersExclude]],
  ['readers barge past a queued writer', ReadersBarge, [noWriterStarvation, fifoAcrossModes]],
  ['one reader admitted per release', OneAdmittedPerRelease, [queuedReadersTogether]],
  ['the downgrade read queues behind a waiting writer', DowngradeQueues, [downgrade]],
  ['holds that never expire', HoldsNeverExpire, [crashedReader, crashedPermitReturns]],
  ['one permit too many', PermitOffByOne, [allPermitsAtOnce, neverMoreThanPermits]],
  ['a release that wakes nobody', ReleaseWakesNobody, [oneReleaseOneWaiter]],
  ['a release that admits two waiters', ReleaseAdmitsTwo, [oneReleaseOneWaiter]],
  ['an aborted waiter left in the queue', AbortedWaiterStays, [readWriteChaos, semaphoreChaos]],
  ['permits not recorded', PermitsNotRecorded, [permitsMismatchRefused]],
  ['fences that start again when the key is idle', FenceRestartsWhenIdle, [readFencesAfterIdle, permitFencesAfterIdle]],
  ['a permit renewal that keeps the old lease end', RenewKeepsLeaseEnd, [permitRenewKeeps]],
];

async function expectCaught(
  what: string,
  testCase: ConformanceCase,
  create: (prefix: string) => LockClient,
  residue?: (prefix: string) => Promise<number>,
  capabilities = memoryCapabilities,
): Promise<void> {
  const options = {
    name: `mutant: ${what}`,
    capabilities,
    create: (_: unknown, { prefix }: { prefix: string }) => create(prefix),
    // Enough aborts and timeouts to strand a queue entry every run; few, because a stuck queue makes each wait run out.
    chaosOperations: 40,
    permitsRecorded: true,
    ...(residue ? { residue: (_: unknown, prefix: string) => residue(prefix) } : {}),
  };
  const error = await runCase(testCase, options).then(
    () => undefined,
    (e: unknown) => e,
  );
  console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
  expect(error).toBeInstanceOf(Error);
}

describe('the read-write and semaphore cases catch broken backends', () => {
  // The memory queue is FIFO but the memory backend does not declare `fair` (its mutex lets a
  // newcomer barge): the FIFO case runs here as on a backend that declares it.
  const fifo = { what: 'a freed permit handed to the newest waiter', Mutant: NewestWaiterFirst, cases: [permitsFifo] };
  for (const { what, Mutant, cases, capabilities } of [
    ...mutants.map(([what, Mutant, cases]) => ({ what, Mutant, cases, capabilities: memoryCapabilities })),
    { ...fifo, capabilities: { ...memoryCapabilities, fair: true } },
  ]) {
    for (const testCase of cases) {
      it(`${what} fails "${testCase.title}"`, async () => {
        const store = memoryStore(`mutant-${what}-${testCase.title}`);
        store.queued = new Mutant((id) => store.nextFence(id));
        await expectCaught(
          what,
          testCase,
          (prefix) => createLockClient({ backend: new MemoryBackend(store, 'memory-mutant'), prefix }),
          async (prefix) => store.queued.residue(prefix),
          capabilities,
        );
      });
    }
  }

  it(`the unbroken memory queue passes "${permitsFifo.title}" (declared fair here)`, async () => {
    const store = memoryStore('fifo-unbroken');
    await runCase(permitsFifo, {
      name: 'memory queue as a fair backend',
      capabilities: { ...memoryCapabilities, fair: true },
      create: (_: unknown, { prefix }: { prefix: string }) => createLockClient({ backend: new MemoryBackend(store, 'memory'), prefix }),
    });
  });

  it(`an upgrade that is not refused fails "${upgradeRefused.title}"`, async () => {
    // The refusal is core's: the mutant is a client whose write side forgets who holds the read lock.
    const create = (prefix: string): LockClient => {
      const inner = createLockClient({ url: 'memory://mutant-upgrade', prefix });
      return new Proxy(inner, {
        get(target, property, receiver) {
          if (property !== 'readWriteLock') return Reflect.get(target, property, receiver) as unknown;
          return (key: string) => {
            const lock = target.readWriteLock(key);
            const write = { ...lock.write, acquire: (options?: object) => lock.write.acquire({ ...options, owner: 'another-owner' }) };
            return { key, read: lock.read, write };
          };
        },
      });
    };
    await expectCaught('an upgrade that is not refused', upgradeRefused, create);
  });

  it(`a refusal that lists backends instead of naming the capability it lacks fails "${unsupportedPrimitive.title}"`, async () => {
    // The mutant is a client whose refusal reads as core's used to: "the backends that do: ...".
    const create = (prefix: string): LockClient => {
      const inner = createLockClient({ url: 'memory://mutant-unnamed-capability', prefix });
      const refuse = (): Promise<never> =>
        Promise.reject(new UnsupportedOperationError('readWriteLock', 'the backends that do: memory, zookeeper, redis (?mode=fair)'));
      const side = (key: string) => ({ key, acquire: refuse, tryAcquire: refuse, withLock: refuse });
      return new Proxy(inner, {
        get(target, property, receiver) {
          if (property !== 'readWriteLock') return Reflect.get(target, property, receiver) as unknown;
          return (key: string) => ({ key, read: side(key), write: side(key) });
        },
      });
    };
    await expectCaught('a refusal that names no capability', unsupportedPrimitive, create, undefined, {
      ...memoryCapabilities,
      readWrite: false,
    });
  });

  it(`a backend that has read-write locks but says it has not fails "${unsupportedPrimitive.title}"`, async () => {
    await expectCaught(
      'capabilities that understate the backend',
      unsupportedPrimitive,
      (prefix) => createLockClient({ url: 'memory://mutant-unsupported', prefix }),
      undefined,
      { ...memoryCapabilities, readWrite: false },
    );
  });
});
