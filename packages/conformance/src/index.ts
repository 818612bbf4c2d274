export { describeLockConformance, caseGroups } from './suite/describe.js';
export {
  runCase,
  resolveOptions,
  type CaseContext,
  type ConformanceCase,
  type ConformanceOptions,
  type FairHooks,
  type FaultHooks,
  type ResolvedOptions,
  type ServerLike,
} from './suite/context.js';
export * from './suite/safety.js';
export * from './suite/leases.js';
export * from './suite/lock-delay.js';
export * from './suite/waiting.js';
export * from './suite/reentrancy.js';
export * from './suite/faults.js';
export * from './suite/input.js';
export * from './suite/hygiene.js';
export * from './suite/multi.js';
export * from './suite/election.js';
export * from './suite/election-outage.js';
export * from './suite/election-leader.js';
export * from './suite/read-write.js';
export * from './suite/semaphore.js';
export * from './suite/kind-fences.js';
export { Occupancy } from './suite/primitives-util.js';
export * from './suite/fair.js';
export * from './suite/lease-edges.js';
export * from './suite/key-edges.js';
export * from './suite/server-faults.js';
export * from './suite/silent-link.js';
export * from './suite/crowd.js';
export * from './suite/lifecycle.js';
export * from './suite/fencing.js';
export * from './suite/run-once.js';
export * from './suite/operations.js';
export { ambiguousUrls, describeAmbiguousUrls, type AmbiguousUrlOptions } from './suite/ambiguous-urls.js';
export {
  expectNoSecret,
  expectRefusedConnection,
  failedFirstAcquire,
  type RefusedConnectionExpectation,
} from './suite/connection-errors.js';
export { firstTrueWhileCalling, takesFreshKey } from './suite/keep-calling.js';
