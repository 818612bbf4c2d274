import { afterAll, beforeAll, describe, it } from 'vitest';
import { resolveOptions, runCase, type ConformanceCase, type ConformanceOptions, type ServerLike } from './context.js';
import { electionCases } from './election.js';
import { electionLeaderCases } from './election-leader.js';
import { electionOutageCases } from './election-outage.js';
import { fairCases } from './fair.js';
import { faultCases } from './faults.js';
import { fencingCases } from './fencing.js';
import { hygieneCases } from './hygiene.js';
import { inputCases } from './input.js';
import { leaseCases } from './leases.js';
import { lockDelayCases } from './lock-delay.js';
import { multiCases } from './multi.js';
import { operationsCases } from './operations.js';
import { readWriteCases } from './read-write.js';
import { reentrancyCases } from './reentrancy.js';
import { safetyCases } from './safety.js';
import { semaphoreCases } from './semaphore.js';
import { waitingCases } from './waiting.js';
import { crowdCases } from './crowd.js';
import { keyEdgeCases } from './key-edges.js';
import { leaseEdgeCases } from './lease-edges.js';
import { lifecycleCases } from './lifecycle.js';
import { serverFaultCases } from './server-faults.js';
import { runOnceCases } from './run-once.js';
import { silentLinkCases } from './silent-link.js';

export const caseGroups: Readonly<Record<string, readonly ConformanceCase[]>> = {
  safety: safetyCases,
  leases: [...leaseCases, ...leaseEdgeCases],
  lockDelay: lockDelayCases,
  waiting: [...waitingCases, ...crowdCases],
  reentrancy: reentrancyCases,
  faults: [...faultCases, ...serverFaultCases, ...silentLinkCases],
  input: [...inputCases, ...keyEdgeCases],
  hygiene: [...hygieneCases, ...lifecycleCases],
  multi: multiCases,
  election: [...electionCases, ...electionLeaderCases, ...electionOutageCases],
  readWrite: readWriteCases,
  semaphore: semaphoreCases,
  fair: fairCases,
  fencing: fencingCases,
  runOnce: runOnceCases,
  operations: operationsCases,
};

/**
 * Registers every shared case with vitest for one adapter configuration (as keyv's
 * @keyv/test-suite and DistributedLock's shared provider tests do). Cases the capabilities or
 * missing fault hooks exclude are registered with it.skip and the reason in their title.
 */
export function describeLockConformance<S extends ServerLike>(options: ConformanceOptions<S>): void {
  if (options.capabilities === undefined) {
    // Skips are decided at collection time, before any server starts: the caller must say up front.
    throw new TypeError(
      `describeLockConformance(${options.name}): options.capabilities is required (e.g. the backend's exported capabilities)`,
    );
  }
  const resolved = resolveOptions(options);
  describe(`deadbolt conformance: ${options.name}`, () => {
    let server: S | undefined;
    if (options.servers) {
      const start = options.servers;
      beforeAll(async () => {
        server = await start();
      });
      afterAll(async () => {
        await server?.stop();
      });
    }
    for (const [group, cases] of Object.entries(caseGroups)) {
      describe(group, () => {
        for (const testCase of cases) {
          const reason = options.skipGroups?.[group] ?? testCase.requires?.(resolved as never);
          if (reason !== undefined) it.skip(`${testCase.title} [skipped: ${reason}]`, () => undefined);
          else it(testCase.title, () => runCase(testCase, options, server));
        }
      });
    }
  });
}
