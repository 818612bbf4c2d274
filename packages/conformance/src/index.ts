export { describeLockConformance, caseGroups } from './suite/describe.js';
export { runCase, resolveOptions, type CaseContext, type ConformanceCase, type ConformanceOptions, type FaultHooks, type ResolvedOptions, type ServerLike } from './suite/context.js';
export * from './suite/safety.js';
export * from './suite/leases.js';
export * from './suite/waiting.js';
export * from './suite/reentrancy.js';
export * from './suite/faults.js';
export * from './suite/input.js';
export * from './suite/hygiene.js';
