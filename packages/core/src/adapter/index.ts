/**
 * `@deadbolt/core/adapter`: everything an adapter author needs and a user does not. The contract a
 * backend implements, the scheme registry, and the shared adapter kit (the call guard, the keyed waiter set, safe inspection, URL parsing,
 * the client side of a server-granted FIFO queue, the lease bound),
 * so that every adapter maps errors, bounds calls and reads URLs the same way.
 */
import '../index.js';

export type {
  AcquireRequest,
  AttemptResult,
  BackendConfig,
  BackendFactory,
  Capabilities,
  Grant,
  LockBackend,
  LockKind,
} from '../backend.js';
export type {
  BackendDrivers,
  ElectionDriver,
  HoldDriver,
  KindsDriver,
  MultiDriver,
  OperationsDriver,
  RunsDriver,
} from '../contract/drivers.js';
export { defaultKeyOrder, type MultiAttemptResult } from '../multi-backend.js';
export { forcedMarkerMs, type BackendInspection } from '../operations-backend.js';
export { ForcedReleaseError } from '../forced-release-error.js';
export type { CampaignRequest, TermGrant } from '../election-backend.js';
// Deprecated: the old style of the contract, where every primitive's methods sit on the backend
// object. Core no longer reads them (it reads the drivers, contract/drivers.ts); they stay
// exported until every adapter offers drivers, then go with contract/legacy.ts.
export type { MultiLockBackend } from '../multi-backend.js';
export { isOperationsBackend, type OperationsBackend } from '../operations-backend.js';
export { isElectionBackend, type ElectionBackend } from '../election-backend.js';
export { storesRuns, type RunOnceBackend } from '../run-once/contract.js';
export { findBackendFactory, knownBackendPackages, registerBackend, registeredSchemes } from '../registry.js';
export { DeadlineExceededError, withDeadline } from '../deadline.js';
export { guardCall, type GuardedCall } from './call-guard.js';
export { onAbort } from './abort-fanout.js';
export { DeadlineWheel, type Watch } from './deadline-wheel.js';
export { KeyedWaiters, type KeyedWaitersHooks } from './keyed-waiters.js';
export { batchWrite, type Corkable } from './write-batching.js';
export { inspectSafely } from './safe-inspect.js';
export { parseBackendUrl, redactUrl } from '../url.js';
export { backoffDelayMs, defaultBackoff, type BackoffPolicy } from '../backoff.js';
export { createMemoryBackend, MemoryBackend, memoryCapabilities } from '../memory/backend.js';
export { MemoryStore, memoryStore, type MemoryEntry } from '../memory/store.js';
export { QueuedLocks, type QueuedGrant, type Entry as QueuedLockEntry } from '../memory/queued.js';
export {
  BackendConfigurationError,
  BackendUnavailableError,
  ClientClosedError,
  DeadboltError,
  InvalidArgumentError,
  LockLostError,
  LockReleasedError,
  LockTimeoutError,
  LockUpgradeError,
  UnsupportedOperationError,
  type ErrorContext,
} from '../errors.js';
export {
  booleanOption,
  choiceOption,
  definedEntries,
  durationOption,
  fractionOption,
  hostListOption,
  integerOption,
  parseHostList,
  parseHostPort,
  redactUrlText,
  rejectAmbiguousUrl,
  rejectUnknownNames,
  splitBackendUrl,
  stringOption,
  urlParameters,
  type BackendUrlParts,
  type HostAddress,
} from './url-options.js';
export {
  builtInDialectClassifier,
  endpointOf,
  explainConnectionError,
  type ConnectionContext,
  type ConnectionErrorClass,
  type ConnectionErrorClassifier,
} from './connection-errors.js';
export { closedError } from './closed-error.js';
export { leaseValidUntil } from './lease-bounds.js';
export { JitteredTicker } from './jittered-ticker.js';
export { ServerQueue } from './server-queue.js';
export type { GrantSink, HeartbeatAnswer, QueueAnswer, QueuedToken, ServerQueuePort } from './server-queue-port.js';
