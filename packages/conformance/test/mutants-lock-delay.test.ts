// Test-only broken backends for the lock-delay cases: each fails on a bug an adapter could plausibly
// ship. The guard in every-case-has-a-mutant.test.ts keeps this list complete.
import { createLockClient } from '@deadbolt/core';
import {
  MemoryBackend,
  memoryCapabilities,
  memoryStore,
  type AcquireRequest,
  type AttemptResult,
  type Capabilities,
  type Grant,
} from '@deadbolt/core/adapter';
import { describe, expect, it } from 'vitest';
import {
  lockDelayAfterCrash,
  lockDelayAfterHandOff,
  lockDelayHolderLeaseUnchanged,
  lockDelayNotAfterRelease,
  lockDelayRefused,
  runCase,
  type ConformanceCase,
  type ConformanceOptions,
} from '../src/index.js';
import type { Mutant } from './memory-mutants.js';

/** Declares lock-delay but sets the plain lease: the key is free again at ttl. */
class DelayIgnored extends MemoryBackend {
  override tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return super.tryAcquire({ ...request, lockDelayMs: 0 });
  }
}

/** The grant's PX is the plain ttl, though the grant records the delay (renewals add it): a holder that never renews leaves no delay. */
class GrantDropsDelay extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const result = await super.tryAcquire({ ...request, lockDelayMs: 0 });
    if (result.acquired && (request.lockDelayMs ?? 0) > 0)
      return { acquired: true, grant: { ...result.grant, lockDelayMs: request.lockDelayMs } };
    return result;
  }
}

/** A hand-off (the key's next grant after a release) made in place with the waiter's plain ttl, as a queue that stores no delay would. */
const releasedKeys = new Set<string>(); // shared, as the server's state is, by every client's backend
class HandOffDropsDelay extends MemoryBackend {
  override release(grant: Grant): Promise<boolean> {
    releasedKeys.add(grant.key);
    return super.release(grant);
  }
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const handOff = releasedKeys.has(request.key);
    const result = await super.tryAcquire(handOff ? { ...request, lockDelayMs: 0 } : request);
    if (result.acquired) releasedKeys.delete(request.key);
    return result;
  }
}

/** The grant carries the delay, but a renewal re-sets the plain ttl (PEXPIRE ttl, forgetting the delay). */
class RenewalDropsDelay extends MemoryBackend {
  override renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const { lockDelayMs: _dropped, ...plain } = grant;
    return super.renew(plain, ttlMs);
  }
}

/** Hands the server's longer expiry to the holder as its validity: it trusts its lease for ttl + delay. */
class HolderTrustsDelay extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const result = await super.tryAcquire(request);
    if (result.acquired) result.grant.validUntil = Date.now() + request.ttlMs + (request.lockDelayMs ?? 0);
    return result;
  }
}

/** A release that leaves the delay behind (PEXPIRE delay instead of DEL): the next owner waits it out. */
class ReleaseLeavesDelay extends MemoryBackend {
  override async release(grant: Grant): Promise<boolean> {
    const holder = this.store.live(grant.key, Date.now());
    if (holder?.token !== grant.token) return false;
    holder.expiresAt = Date.now() + (grant.lockDelayMs ?? 0);
    return true;
  }
}

/** Claims lock-delay (an adapter copying the memory backend's capabilities) while its documented capabilities deny it, and ignores it. */
class ClaimsLockDelay extends DelayIgnored {
  override readonly capabilities: Capabilities = { ...memoryCapabilities, lockDelay: true };
}

interface Scenario {
  readonly what: string;
  readonly cases: readonly ConformanceCase[];
  readonly mutant: Mutant;
  /** What the adapter's test file tells the suite, when it differs from what the mutant declares. */
  readonly declared?: Capabilities;
}

const scenarios: Scenario[] = [
  { what: 'lock-delay declared, the plain lease set', cases: [lockDelayAfterCrash], mutant: DelayIgnored },
  { what: 'a grant that forgets the delay (its renewals add it)', cases: [lockDelayAfterCrash], mutant: GrantDropsDelay },
  { what: 'a hand-off that forgets the delay', cases: [lockDelayAfterHandOff], mutant: HandOffDropsDelay },
  { what: 'a renewal that forgets the delay', cases: [lockDelayAfterCrash], mutant: RenewalDropsDelay },
  { what: "the server's expiry given to the holder as its validity", cases: [lockDelayHolderLeaseUnchanged], mutant: HolderTrustsDelay },
  { what: 'a release that leaves the delay behind', cases: [lockDelayNotAfterRelease], mutant: ReleaseLeavesDelay },
  {
    what: 'lock-delay claimed by a backend that cannot enforce it',
    cases: [lockDelayRefused],
    mutant: ClaimsLockDelay,
    declared: { ...memoryCapabilities, lockDelay: false },
  },
];

async function expectCaught(testCase: ConformanceCase, scenario: Scenario): Promise<void> {
  const store = memoryStore(`mutant-lock-delay-${scenario.what}-${testCase.title}`);
  const backends = new WeakMap<object, MemoryBackend>();
  const options: ConformanceOptions = {
    name: `mutant: ${scenario.what}`,
    capabilities: scenario.declared ?? memoryCapabilities,
    create: (_, { prefix }) => {
      const backend = new scenario.mutant(store, 'memory-mutant');
      const client = createLockClient({ backend, prefix });
      backends.set(client, backend);
      return client;
    },
    kill: async (client) => {
      await backends.get(client)?.close();
    },
    commandCount: async () => store.operations,
  };
  const error = await runCase(testCase, options).then(
    () => undefined,
    (e: unknown) => e,
  );
  console.info(`[mutant] ${scenario.what}: caught by "${testCase.title}": ${String(error)}`);
  expect(error).toBeInstanceOf(Error);
}

describe.concurrent('the lock-delay cases catch broken backends', () => {
  for (const scenario of scenarios) {
    for (const testCase of scenario.cases) {
      it(`${scenario.what} fails "${testCase.title}"`, () => expectCaught(testCase, scenario), 30_000);
    }
  }
});
