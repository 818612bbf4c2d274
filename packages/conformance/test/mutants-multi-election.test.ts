// Test-only broken backends for the multi-lock and election groups: the suite must catch each one.
import { createLockClient, type LockClient } from '@deadbolt/core';
import {
  MemoryBackend,
  memoryCapabilities,
  memoryStore,
  type AcquireRequest,
  type CampaignRequest,
  type Grant,
  type MemoryStore,
  type MultiAttemptResult,
  type TermGrant,
} from '@deadbolt/core/adapter';
import { describe, expect, it } from 'vitest';
import {
  electionKilledLeader,
  electionLeaderExpires,
  electionLeaderFresh,
  electionOneLeader,
  electionRenewalExtends,
  electionResignHandOff,
  electionTermsIncrease,
  multiAbortMidWay,
  multiAllOrNothing,
  multiExcludesSingle,
  multiFencesPerKey,
  multiNoDeadlock,
  runCase,
  type ConformanceCase,
} from '../src/index.js';

/** Takes keys one by one in the caller's order (no global order, no atomic step): opposite orders deadlock. */
class CallerOrder extends MemoryBackend {
  constructor(...args: ConstructorParameters<typeof MemoryBackend>) {
    super(...args);
    Object.defineProperty(this, 'tryAcquireMany', { value: undefined });
  }
  orderKeys(keys: readonly string[]): readonly string[] {
    return keys;
  }
}

/** Keeps the keys it could take when another is busy. */
class PartialMany extends MemoryBackend {
  override async tryAcquireMany(requests: readonly AcquireRequest[]): Promise<MultiAttemptResult> {
    let busyKey: string | undefined;
    for (const request of requests) {
      if (this.store.live(request.key, Date.now())) busyKey = request.key;
      else this.take(request, Date.now());
    }
    return busyKey === undefined ? super.tryAcquireMany([]) : { acquired: false, busyKey };
  }
}

/** Takes every key without looking at its holder. */
class BlindMany extends MemoryBackend {
  override async tryAcquireMany(requests: readonly AcquireRequest[]): Promise<MultiAttemptResult> {
    return { acquired: true, grants: requests.map((request) => this.take(request, Date.now())) };
  }
}

/** Fences every key of a multi-lock from the first key's counter; single grants count per key. */
class SharedMultiFence extends MemoryBackend {
  override async tryAcquireMany(requests: readonly AcquireRequest[]): Promise<MultiAttemptResult> {
    const result = await super.tryAcquireMany(requests);
    if (!result.acquired) return result;
    const counter = requests[0]!.key;
    const grants = result.grants.map((grant) => {
      const fence = grant.key === counter ? grant.fence! : this.store.nextFence(counter);
      const entry = this.store.live(grant.key, Date.now())!;
      this.store.set(grant.key, { ...entry, fence });
      return { ...grant, fence };
    });
    return { acquired: true, grants };
  }
}

/** Every candidate wins at once. */
class EveryoneLeads extends MemoryBackend {
  override async campaign(request: CampaignRequest): Promise<TermGrant | undefined> {
    return { ...this.take(request, Date.now(), request.candidate), sentAt: Date.now() };
  }
}

/** Every term is number 1. */
class RepeatedTerm extends MemoryBackend {
  override async campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    const grant = await super.campaign(request, deadline, signal);
    return grant && { ...grant, fence: 1 };
  }
}

/** Release says yes and leaves the leader in place: the next one waits for the lease to run out. */
class StickyRelease extends MemoryBackend {
  override async release(): Promise<boolean> {
    return true;
  }
}

/** A leader's lease never runs out: a dead leader is never replaced. */
class EternalLeader extends MemoryBackend {
  override async campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    const grant = await super.campaign(request, deadline, signal);
    const entry = grant && this.store.live(grant.key, Date.now());
    if (entry) entry.expiresAt = Number.POSITIVE_INFINITY;
    return grant;
  }
  override async renew(): Promise<boolean> {
    return true;
  }
}

/** The leader's id kept in a record of its own, with no lease: it names a leader whose term ran out, until a release. */
const leaderRecords = new WeakMap<MemoryStore, Map<string, string>>();
class LeaderRecordOutlivesTerm extends MemoryBackend {
  private get records(): Map<string, string> {
    let records = leaderRecords.get(this.store);
    if (!records) leaderRecords.set(this.store, (records = new Map()));
    return records;
  }
  override async campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    const grant = await super.campaign(request, deadline, signal);
    if (grant) this.records.set(request.key, request.candidate);
    return grant;
  }
  override async release(grant: Grant): Promise<boolean> {
    this.records.delete(grant.key);
    return super.release(grant);
  }
  override async leader(key: string): Promise<string | undefined> {
    return this.records.get(key);
  }
}

/** leader() answered from the connection's memory of its first answer. */
class RemembersLeader extends MemoryBackend {
  private readonly known = new Map<string, string | undefined>();
  override async leader(key: string): Promise<string | undefined> {
    if (!this.known.has(key)) this.known.set(key, await super.leader(key));
    return this.known.get(key);
  }
}

/** A renewal that says yes and leaves the lease's expiry where it was. */
class RenewWithoutExtending extends MemoryBackend {
  override async renew(grant: Grant): Promise<boolean> {
    return this.store.live(grant.key, Date.now())?.token === grant.token;
  }
}

type Mutant = new (...args: ConstructorParameters<typeof MemoryBackend>) => MemoryBackend;

const mutants: [string, Mutant, ConformanceCase][] = [
  ['acquireAll in the caller\u2019s key order', CallerOrder, multiNoDeadlock],
  ['tryAcquireMany that keeps the free keys', PartialMany, multiAllOrNothing],
  ['tryAcquireMany that keeps the free keys', PartialMany, multiAbortMidWay],
  ['tryAcquireMany that ignores holders', BlindMany, multiExcludesSingle],
  ['a multi-lock whose keys share the first key\u2019s fence counter', SharedMultiFence, multiFencesPerKey],
  ['campaign that ignores the leader', EveryoneLeads, electionOneLeader],
  ['campaign with a repeated term', RepeatedTerm, electionTermsIncrease],
  ['release that leaves the leader in place', StickyRelease, electionResignHandOff],
  ['a leader lease that never runs out', EternalLeader, electionKilledLeader],
  ['a leader record that outlives the term', LeaderRecordOutlivesTerm, electionLeaderExpires],
  ['leader() remembered per connection', RemembersLeader, electionLeaderFresh],
  ['a term renewal that does not extend the lease', RenewWithoutExtending, electionRenewalExtends],
];

describe('the multi and election groups catch broken backends', () => {
  for (const [what, Mutant, testCase] of mutants) {
    it(`${what} fails "${testCase.title}"`, async () => {
      const store = memoryStore(`mutant-${what}-${testCase.title}`);
      const backends = new WeakMap<LockClient, MemoryBackend>();
      const options = {
        name: `mutant: ${what}`,
        capabilities: memoryCapabilities,
        multiWaitMs: 2_000,
        create: (_: unknown, { prefix }: { prefix: string }) => {
          const backend = new Mutant(store, 'memory-mutant');
          const client = createLockClient({ backend, prefix });
          backends.set(client, backend);
          return client;
        },
        kill: async (client: LockClient) => {
          await backends.get(client)?.close();
        },
      };
      const error = await runCase(testCase, options).then(
        () => undefined,
        (e: unknown) => e,
      );
      console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
      expect(error).toBeInstanceOf(Error);
    });
  }
});
