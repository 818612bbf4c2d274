// Test-only broken backends for the cases issue 14 added: each case must catch its mutant.
import { createLockClient, InvalidArgumentError, type LockClient } from '@deadbolt/core';
import {
  MemoryBackend,
  memoryCapabilities,
  memoryStore,
  type AcquireRequest,
  type AttemptResult,
  type Grant,
  type MemoryStore,
} from '@deadbolt/core/adapter';
import { afterAll, describe, expect, it } from 'vitest';
import {
  badInputSendsNothing,
  batchRenewal,
  credentialScan,
  crowdOnOneKey,
  fencesAcrossExpiry,
  fractionalExpiry,
  frozenServerAcquire,
  heldAfterPause,
  killedConnection,
  longKeysDifferAtEnd,
  runCase,
  savedSignalsAfterPause,
  separatorKeys,
  severalClientsClose,
  staleHandleSameOwner,
  waitEndings,
  type ConformanceCase,
  type ConformanceOptions,
  type ServerLike,
} from '../src/index.js';
import { mapsKeys, ValidityInSecondsReadAsMs, type Mutant } from './memory-mutants.js';

/** Rewrites the stored expiry of every fresh grant. */
function expiresAt(when: (now: number, ttlMs: number) => number): Mutant {
  return class extends MemoryBackend {
    override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
      const result = await super.tryAcquire(request);
      const entry = result.acquired ? this.store.live(request.key, Date.now()) : undefined;
      if (entry) entry.expiresAt = when(Date.now(), request.ttlMs);
      return result;
    }
  };
}

const releasesByKey = new Map<string, number>();
/** Fences that count releases: after an expiry (no release) the next holder gets the same fence. */
class FenceCountsReleases extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const result = await super.tryAcquire(request);
    if (!result.acquired) return result;
    return { acquired: true, grant: { ...result.grant, fence: (releasesByKey.get(request.key) ?? 0) + 1 } };
  }
  override async release(grant: Grant): Promise<boolean> {
    const released = await super.release(grant);
    if (released) releasesByKey.set(grant.key, (releasesByKey.get(grant.key) ?? 0) + 1);
    return released;
  }
}

/** Compare-and-delete on the owner instead of the grant's token. */
class ReleaseByOwner extends MemoryBackend {
  override async release(grant: Grant): Promise<boolean> {
    const holder = this.store.live(grant.key, Date.now());
    if (holder?.owner !== grant.owner) return false;
    this.store.delete(grant.key);
    return true;
  }
}

/** A batch renewal that renews only the first lease and says yes to all. */
class RenewManyFirstOnly extends MemoryBackend {
  renewMany = async (grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> => {
    if (grants[0]) await this.renew(grants[0], ttlMs[0]!);
    return grants.map(() => true);
  };
}

/** Declares no key limit and checks the key itself, after the store was touched. */
class ChecksKeysAfterIo extends MemoryBackend {
  override readonly capabilities = { ...memoryCapabilities, maxKeyBytes: 1 << 30 };
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    this.store.operations += 1;
    if (Buffer.byteLength(request.key) > memoryCapabilities.maxKeyBytes) throw new InvalidArgumentError('key', 'too long');
    return super.tryAcquire(request);
  }
}

/** Wakes every waiter on each release (the thundering herd): 3,000 waiters cannot be served in 8 s. */
class WakesEveryWaiter extends MemoryBackend {
  override async release(grant: Grant): Promise<boolean> {
    const released = await super.release(grant);
    this.store.waiters.wakeAll(grant.key);
    return released;
  }
}

/** Waits out its whole bound whatever the signal says. */
class IgnoresAbortWhileWaiting extends MemoryBackend {
  override waitForChange(_key: string, maxWaitMs: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, maxWaitMs));
  }
}

/** Leaves a timer running after close(). */
class LeaksTimerOnClose extends MemoryBackend {
  override async close(): Promise<void> {
    setTimeout(() => undefined, 5_000);
    await super.close();
  }
}

/** A "server" that can freeze: requests queue and run when it wakes, after the client timed out, with no undo. */
const freezer = { frozen: false, queued: [] as (() => void)[] };
class FreezesWithoutUndo extends MemoryBackend {
  readonly callTimeoutMs = 200;
  override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    if (!freezer.frozen) return super.tryAcquire(request);
    freezer.queued.push(() => void super.tryAcquire(request));
    return new Promise((_, reject) => setTimeout(() => reject(new Error('command timed out')), this.callTimeoutMs));
  }
}

/**
 * A "server" that freezes (an attempt times out and is lost: nothing is left to undo), and a backend
 * that then polls for its return on an interval that close() never clears.
 */
const froze: { frozen: boolean; poller?: NodeJS.Timeout } = { frozen: false };
class FreezeLeavesPoller extends MemoryBackend {
  readonly callTimeoutMs = 200;
  override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    if (!froze.frozen) return super.tryAcquire(request);
    froze.poller ??= setInterval(() => undefined, 100);
    return new Promise((_, reject) => setTimeout(() => reject(new Error('command timed out')), this.callTimeoutMs));
  }
}

/** A connection kill loses every lock on the "server", yet renew keeps saying yes. */
const issued: Grant[] = [];
class LosesLocksButRenews extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const result = await super.tryAcquire(request);
    if (result.acquired) issued.push(result.grant);
    return result;
  }
  override async renew(): Promise<boolean> {
    return true;
  }
}

const secret = 'mutant-S3cr3t';

interface Scenario {
  readonly what: string;
  readonly mutant: Mutant;
  readonly testCase: ConformanceCase;
  readonly options?: (store: MemoryStore) => Partial<ConformanceOptions<ServerLike>>;
}

const scenarios: Scenario[] = [
  {
    what: 'expiry rounded up to whole seconds (declared minTtlMs 1)',
    mutant: expiresAt((now, ttl) => now + Math.ceil(ttl / 1_000) * 1_000),
    testCase: fractionalExpiry,
  },
  { what: 'a lease that ends at 80% of its ttl', mutant: expiresAt((now, ttl) => now + Math.floor(ttl * 0.8)), testCase: fractionalExpiry },
  { what: 'fences that count releases only', mutant: FenceCountsReleases, testCase: fencesAcrossExpiry },
  { what: 'release that compares the owner, not the token', mutant: ReleaseByOwner, testCase: staleHandleSameOwner },
  { what: 'a validUntil far past the lease', mutant: ValidityInSecondsReadAsMs, testCase: heldAfterPause },
  { what: 'a validUntil far past the lease (saved signals)', mutant: ValidityInSecondsReadAsMs, testCase: savedSignalsAfterPause },
  { what: 'renewMany that renews only the first lease', mutant: RenewManyFirstOnly, testCase: batchRenewal },
  { what: 'keys truncated to 256 characters', mutant: mapsKeys((key) => key.slice(0, 256)), testCase: longKeysDifferAtEnd },
  { what: 'keys with "/" mapped to ":"', mutant: mapsKeys((key) => key.replace(/\//g, ':')), testCase: separatorKeys },
  {
    what: 'a key limit checked after I/O',
    mutant: ChecksKeysAfterIo,
    testCase: badInputSendsNothing,
    options: (store) => ({ commandCount: async () => store.operations }),
  },
  {
    what: 'every waiter woken on each release',
    mutant: WakesEveryWaiter,
    testCase: crowdOnOneKey,
    options: () => ({ manyWaiters: 3_000, manyWaitersWaitMs: 8_000 }),
  },
  { what: 'a wait that ignores its abort signal', mutant: IgnoresAbortWhileWaiting, testCase: waitEndings },
  { what: 'close() that leaves a timer', mutant: LeaksTimerOnClose, testCase: severalClientsClose },
  {
    what: 'a frozen server that runs a given-up attempt later, with no undo',
    mutant: FreezesWithoutUndo,
    testCase: frozenServerAcquire,
    options: () => ({
      faults: {
        pause: async () => void (freezer.frozen = true),
        resume: async () => {
          freezer.frozen = false;
          for (const run of freezer.queued.splice(0)) run();
        },
      },
    }),
  },
  {
    what: 'a poller started on a frozen server that close() leaves running',
    mutant: FreezeLeavesPoller,
    testCase: frozenServerAcquire,
    options: () => ({
      faults: {
        pause: async () => void (froze.frozen = true),
        resume: async () => void (froze.frozen = false),
      },
    }),
  },
  {
    what: 'locks lost on a connection kill while renew says yes',
    mutant: LosesLocksButRenews,
    testCase: killedConnection,
    options: (store) => ({ faults: { killConnections: async () => issued.splice(0).forEach((grant) => store.delete(grant.key)) } }),
  },
  {
    what: 'a backend named by its URL, password included',
    mutant: MemoryBackend,
    testCase: credentialScan,
    options: (store) => ({
      credentials: (_: unknown, { prefix }: { prefix: string }) => ({
        secret,
        client: createLockClient({ backend: new MemoryBackend(store, `memory://admin:${secret}@localhost`), prefix }) as LockClient,
      }),
    }),
  },
];

describe('the suite catches broken backends (issue 14 cases)', () => {
  // The leak that mutant is made of, stopped once the case has seen it.
  afterAll(() => clearInterval(froze.poller));
  for (const { what, mutant: Mutant, testCase, options } of scenarios) {
    it(`${what} fails "${testCase.title}"`, async () => {
      const store = memoryStore(`mutant-${what}`);
      const given: ConformanceOptions<ServerLike> = {
        name: `mutant: ${what}`,
        capabilities: memoryCapabilities,
        create: (_, { prefix }) => createLockClient({ backend: new Mutant(store, 'memory-mutant'), prefix }),
        ...options?.(store),
      };
      const server: ServerLike = { stop: async () => undefined };
      const error = await runCase(testCase, given, server).then(
        () => undefined,
        (e: unknown) => e,
      );
      console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
      expect(error).toBeInstanceOf(Error);
    }, 60_000);
  }
});
