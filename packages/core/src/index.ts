/**
 * `@deadbolt/core`: the user API. What an adapter author needs (the backend contract, the scheme
 * registry, the adapter kit, the memory backend's parts) lives in `@deadbolt/core/adapter`.
 */
import { DeadboltClient } from './client.js';
import { memoryBackendFactory } from './memory/backend.js';
import { registerBackend } from './registry.js';
import type { LockClient, LockClientConfig } from './types.js';

registerBackend('memory', memoryBackendFactory);

/**
 * Creates a lock client from a URL (`redis://127.0.0.1:6379?mode=setnx`), an options object, or,
 * with no argument, `DEADBOLT_URL` (default `memory://`). Throws InvalidArgumentError for bad
 * configuration before any I/O. The adapter package of a known scheme is imported on first use.
 */
export function createLockClient<Url extends string = string, Name extends string = string>(
  config?: LockClientConfig<Url, Name>,
): LockClient {
  return new DeadboltClient(config as LockClientConfig);
}

export type { Capabilities, LockBackend } from './backend.js';
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
} from './errors.js';
export type {
  AcquireOptions,
  BackendOptionsByScheme,
  BackendOptionsFor,
  Lock,
  LockClient,
  LockClientConfig,
  LockClientOptions,
  LockDefaults,
  LockEvents,
  SchemeOf,
} from './types.js';
export { createMemoryBackend } from './memory/backend.js';
export type { ElectOptions, Election, MultiLock, Term } from './types-multi.js';
export { ForcedReleaseError } from './forced-release-error.js';
export type { ForcedEvent, LeaderChange, ListOptions, LockHolder, LockInspection, ObserveOptions } from './operations-types.js';
export type { Acquirable, ReadWriteLock, Semaphore, SemaphoreOptions } from './kinds.js';
export type { LastRun, RunContext, RunOnceOptions, RunOnceResult, RunOutcome } from './run-once/types.js';
export { maxPermits } from './semaphore.js';
export { defaultLockDefaults } from './config.js';
export { inOwnerFlow } from './owner.js';
export { lockClientToken } from './token.js';
