// Test-only broken backends for the first suite's cases (safety, leases, waiting, reentrancy, input,
// hygiene, faults): each case fails on a bug an adapter could plausibly ship. The guard in
// every-case-has-a-mutant.test.ts keeps this list complete.
import { createLockClient, type AcquireOptions, type LockClient } from '@deadbolt/core';
import {
  MemoryBackend,
  memoryCapabilities,
  memoryStore,
  QueuedLocks,
  type AcquireRequest,
  type AttemptResult,
  type Capabilities,
  type Grant,
  type MemoryStore,
} from '@deadbolt/core/adapter';
import { afterAll, describe, expect, it } from 'vitest';
import {
  abortMidWait,
  autoRenewKeeps,
  badInput,
  blockedUntilLastRelease,
  closeLeavesNothing,
  concurrentFlows,
  doubleRelease,
  fencing,
  handOff,
  independentKeys,
  keyLimit,
  lostLease,
  manualRenewKeeps,
  manyLocks,
  nested,
  oddKeys,
  prefixesIsolate,
  renewAfterExpiry,
  renewAfterLoss,
  renewAfterPause,
  runCase,
  serverDown,
  serverPaused,
  serverRestart,
  waitHonoured,
  type ConformanceCase,
  type ConformanceOptions,
  type ServerLike,
} from '../src/index.js';
import { mapsKeys, ValidityInSecondsReadAsMs, type Mutant } from './memory-mutants.js';

/** A renewal that checks the token and says yes, but re-sets the expiry the lease already had (PEXPIREAT of the first deadline). */
class RenewKeepsOldExpiry extends MemoryBackend {
  override async renew(grant: Grant): Promise<boolean> {
    return this.store.live(grant.key, Date.now())?.token === grant.token;
  }
}

/** The same validity bug, and a renewal that is a plain SET: it re-creates a lease the server already ended. */
class RenewRecreatesLease extends ValidityInSecondsReadAsMs {
  override async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    this.store.set(grant.key, { token: grant.token, owner: grant.owner, fence: grant.fence ?? 0, expiresAt: now + ttlMs });
    return true;
  }
}

/** Release by shortening the lease (EXPIRE key 2) instead of deleting it: the key stays busy for 2 s. */
class ReleaseShortensLease extends MemoryBackend {
  override async release(grant: Grant): Promise<boolean> {
    const holder = this.store.live(grant.key, Date.now());
    if (holder?.token !== grant.token) return false;
    holder.expiresAt = Math.min(holder.expiresAt, Date.now() + 2_000);
    return true;
  }
}

/** Declares server-side reentrancy, re-grants the same owner, but keeps no hold count: the first release frees the key. */
class ReentrantWithoutCount extends MemoryBackend {
  override readonly capabilities: Capabilities = { ...memoryCapabilities, reentrant: 'server' };
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const holder = this.store.live(request.key, Date.now());
    if (holder?.owner === request.owner)
      return { acquired: true, grant: { key: request.key, owner: request.owner, token: holder.token, fence: holder.fence } };
    return super.tryAcquire(request);
  }
}

/** Declares server-side reentrancy but compares tokens, not owners: the same flow cannot get in again. */
class ReentrantNeverReenters extends MemoryBackend {
  override readonly capabilities: Capabilities = { ...memoryCapabilities, reentrant: 'server' };
}

/** A fence taken from the lock entry's own version, which starts again at 1 for every new holder. */
class FencePerEntry extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const result = await super.tryAcquire(request);
    return result.acquired ? { acquired: true, grant: { ...result.grant, fence: 1 } } : result;
  }
}

/** Owners told apart by client only (Redisson's `clientId:threadId` without the thread): two flows of one client re-enter. */
class OwnerIsTheClient extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const holder = this.store.live(request.key, Date.now());
    const clientOf = (owner: string) => owner.slice(0, owner.lastIndexOf(':'));
    if (holder && clientOf(holder.owner) === clientOf(request.owner))
      return { acquired: true, grant: { key: request.key, owner: request.owner, token: holder.token, fence: holder.fence } };
    return super.tryAcquire(request);
  }
}

/** Declares notifications but polls: a waiter sleeps 3 s between looks, whatever a release says. */
class PollsEveryThreeSeconds extends MemoryBackend {
  override waitForChange(_key: string, maxWaitMs: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, Math.min(maxWaitMs, 3_000));
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(signal.reason);
      });
    });
  }
}

/** A native wait that converts its time left to whole seconds, rounded down: 500 ms is no wait at all. */
class WaitInWholeSeconds extends MemoryBackend {
  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    const end = Date.now() + Math.floor((deadline - Date.now()) / 1_000) * 1_000;
    for (;;) {
      const result = await this.tryAcquire(request);
      if (result.acquired) return result.grant;
      request.onContended?.();
      const remainingMs = end - Date.now();
      if (remainingMs <= 0 || signal.aborted) return undefined;
      await this.waitForChange(request.key, remainingMs, signal).catch(() => undefined);
    }
  }
}

/** A server-side FIFO for the mutex whose waiters are not removed when they give up: the release grants the lock to the departed waiter. */
class AbortedWaiterStays extends QueuedLocks {
  protected override leave(): void {}
}
class MutexInServerQueue extends MemoryBackend {
  constructor(store: MemoryStore, name: string) {
    super(store, name);
    if (!(store.queued instanceof AbortedWaiterStays)) store.queued = new AbortedWaiterStays((id) => store.nextFence(id));
  }
  override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.kinds.tryAcquire({ ...request, kind: request.kind ?? { type: 'write' } });
  }
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.kinds.acquire!({ ...request, kind: request.kind ?? { type: 'write' } }, deadline, signal);
  }
  override renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return this.kinds.renew(grant, ttlMs);
  }
  override release(grant: Grant): Promise<boolean> {
    return this.kinds.release(grant);
  }
}

/** Declares a key limit (4 KB) larger than its server takes (250 bytes, memcached's): a long legal key fails at the server. */
class ServerLimitSmallerThanDeclared extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    if (Buffer.byteLength(request.key) > 250) throw new Error('SERVER_ERROR key too long');
    return super.tryAcquire(request);
  }
}

/** Releases go through a send queue of 64 that drops the overflow and still answers true. */
class ReleaseQueueDropsOverflow extends MemoryBackend {
  #inFlight = 0;
  override async release(grant: Grant): Promise<boolean> {
    this.#inFlight += 1;
    try {
      await new Promise((resolve) => setImmediate(resolve));
      return this.#inFlight > 64 ? true : await super.release(grant);
    } finally {
      this.#inFlight -= 1;
    }
  }
}

/** Starts a keep-alive interval on first use that close() forgets. */
const leakedIntervals: NodeJS.Timeout[] = [];
class KeepAliveOutlivesClose extends MemoryBackend {
  #keepAlive: NodeJS.Timeout | undefined;
  override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    if (this.#keepAlive === undefined) leakedIntervals.push((this.#keepAlive = setInterval(() => undefined, 1_000)));
    return super.tryAcquire(request);
  }
}

/** The "server" of the fault cases: a flag the fault hooks flip. */
interface FakeServer extends ServerLike {
  state: 'up' | 'paused' | 'down' | 'restarted';
  readonly frozen: (() => void)[];
}
const fakeServer = (): FakeServer => ({ state: 'up', frozen: [], stop: async () => undefined });
const faultsOf = (server: FakeServer): ConformanceOptions<FakeServer>['faults'] => ({
  restart: async () => void (server.state = 'restarted'),
  pause: async () => void (server.state = 'paused'),
  resume: async () => {
    server.state = 'up';
    for (const wake of server.frozen.splice(0)) wake();
  },
  down: async () => void (server.state = 'down'),
  up: async () => void (server.state = 'up'),
});

/** One shared connection per process that never reconnects once the server restarted (every client after it fails too). */
function neverReconnects(server: FakeServer): Mutant {
  return class extends MemoryBackend {
    override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
      if (server.state === 'restarted') return Promise.reject(new Error('Connection is closed.'));
      return super.tryAcquire(request);
    }
    override renew(grant: Grant, ttlMs: number): Promise<boolean> {
      if (server.state === 'restarted') return Promise.reject(new Error('Connection is closed.'));
      return super.renew(grant, ttlMs);
    }
  };
}

/** No command timeout of its own (declares a 60 s call bound): a frozen server's calls hang until it wakes. */
function noCommandTimeout(server: FakeServer): Mutant {
  return class extends MemoryBackend {
    readonly callTimeoutMs = 60_000;
    override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
      if (server.state !== 'paused') return super.tryAcquire(request);
      return new Promise((resolve) => server.frozen.push(() => resolve(super.tryAcquire(request))));
    }
  };
}

/** Connection refused read as "busy": a down server looks like a held key, and acquire times out instead of failing typed. */
function refusedIsBusy(server: FakeServer): Mutant {
  return class extends MemoryBackend {
    override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
      if (server.state === 'down') return { acquired: false };
      return super.tryAcquire(request);
    }
  };
}

/** A client factory that fills in defaults with `||`: ttl 0 and NaN become the default instead of an error. */
function defaultsWithOr(client: LockClient): LockClient {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'acquire') return Reflect.get(target, property, receiver) as unknown;
      return (key: string, options?: AcquireOptions) => target.acquire(key, { ...options, ttlMs: options?.ttlMs || 30_000 });
    },
  });
}

interface Scenario {
  readonly what: string;
  readonly cases: readonly ConformanceCase[];
  readonly mutant: Mutant | ((server: FakeServer) => Mutant);
  readonly faulty?: boolean;
  readonly wrap?: (client: LockClient) => LockClient;
  readonly options?: Partial<ConformanceOptions<FakeServer>>;
}

const scenarios: Scenario[] = [
  { what: 'a renewal that keeps the old expiry', cases: [autoRenewKeeps, manualRenewKeeps], mutant: RenewKeepsOldExpiry },
  {
    what: 'a validity reported in seconds, read as ms',
    cases: [lostLease, renewAfterLoss, renewAfterExpiry],
    mutant: ValidityInSecondsReadAsMs,
  },
  { what: 'a renewal that re-creates an ended lease (plain SET)', cases: [renewAfterPause], mutant: RenewRecreatesLease },
  { what: 'release by shortening the lease', cases: [doubleRelease], mutant: ReleaseShortensLease },
  { what: 'server reentrancy without a hold count', cases: [blockedUntilLastRelease], mutant: ReentrantWithoutCount },
  { what: 'server reentrancy declared, owners not compared', cases: [nested], mutant: ReentrantNeverReenters },
  { what: 'a fence that starts at 1 for every holder', cases: [fencing], mutant: FencePerEntry },
  { what: 'owners told apart by client only', cases: [concurrentFlows], mutant: OwnerIsTheClient },
  { what: 'notifications declared, polling every 3 s', cases: [handOff], mutant: PollsEveryThreeSeconds },
  { what: 'a native wait in whole seconds, rounded down', cases: [waitHonoured], mutant: WaitInWholeSeconds },
  { what: 'an aborted waiter left in a server-side mutex queue', cases: [abortMidWait], mutant: MutexInServerQueue },
  { what: 'keys hashed into two buckets (a lock id with too few bits)', cases: [independentKeys], mutant: mapsKeys(bucketOf) },
  { what: 'keys filtered to letters and digits', cases: [oddKeys], mutant: mapsKeys((key) => key.replace(/[^A-Za-z0-9]/g, '')) },
  { what: "the client's prefix dropped (namespace after the last ':')", cases: [prefixesIsolate], mutant: mapsKeys(afterLastColon) },
  { what: 'a key limit larger than the server takes', cases: [keyLimit], mutant: ServerLimitSmallerThanDeclared },
  {
    what: 'a release queue that drops its overflow',
    cases: [manyLocks],
    mutant: ReleaseQueueDropsOverflow,
    options: { scaleLocks: 1_000 },
  },
  { what: 'defaults filled in with ||', cases: [badInput], mutant: MemoryBackend, wrap: defaultsWithOr },
  { what: 'a connection that never reconnects after a restart', cases: [serverRestart], mutant: neverReconnects, faulty: true },
  { what: 'no command timeout on a paused server', cases: [serverPaused], mutant: noCommandTimeout, faulty: true },
  { what: 'connection refused read as busy', cases: [serverDown], mutant: refusedIsBusy, faulty: true },
];

function bucketOf(key: string): string {
  let hash = 0;
  for (const char of key) hash = (hash * 31 + (char.codePointAt(0) ?? 0)) >>> 0;
  return `bucket-${hash % 2}`;
}
function afterLastColon(key: string): string {
  return key.slice(key.lastIndexOf(':') + 1);
}

async function expectCaught(what: string, testCase: ConformanceCase, scenario: Scenario): Promise<void> {
  const store = memoryStore(`mutant-core-${what}-${testCase.title}`);
  const server = fakeServer();
  const Backend = scenario.faulty ? (scenario.mutant as (server: FakeServer) => Mutant)(server) : (scenario.mutant as Mutant);
  const wrap = scenario.wrap ?? ((client: LockClient) => client);
  const options: ConformanceOptions<FakeServer> = {
    name: `mutant: ${what}`,
    capabilities: memoryCapabilities,
    create: (_, { prefix }) => wrap(createLockClient({ backend: new Backend(store, 'memory-mutant'), prefix })),
    faults: faultsOf(server),
    ...scenario.options,
  };
  const error = await runCase(testCase, options, server).then(
    () => undefined,
    (e: unknown) => e,
  );
  console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
  expect(error).toBeInstanceOf(Error);
}

// Alone and first: it counts the process's open handles, which a concurrent test would move.
describe('a leaked handle', () => {
  afterAll(() => {
    for (const interval of leakedIntervals) clearInterval(interval);
  });
  it(`a keep-alive that outlives close() fails "${closeLeavesNothing.title}"`, async () => {
    await expectCaught('a keep-alive that outlives close()', closeLeavesNothing, { what: '', cases: [], mutant: KeepAliveOutlivesClose });
  });
});

describe.concurrent('the first suite cases catch broken backends', () => {
  for (const scenario of scenarios) {
    for (const testCase of scenario.cases) {
      it(`${scenario.what} fails "${testCase.title}"`, () => expectCaught(scenario.what, testCase, scenario), 60_000);
    }
  }
});
