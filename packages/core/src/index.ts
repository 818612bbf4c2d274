/**
 * `@deadbolt/core`: the user API. What an adapter author needs (the backend contract, the scheme
 * registry, the adapter kit, the memory backend's parts) lives in `@deadbolt/core/adapter`.
 */
import { DeadboltClient } from './client.js';
import { memoryBackendFactory } from './memory/backend.js';
import { registerBackend } from './registry.js';
import type { LockClient, LockClientConfig } from './api/client.js';

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

export type { Capabilities } from './contract/capabilities.js';
export type { LockBackend } from './contract/backend.js';
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
export type { AcquireOptions, Lock, LockDefaults, LockEvents } from './api/lock.js';
export type { BackendOptionsByScheme, BackendOptionsFor, LockClient, LockClientConfig, LockClientOptions, SchemeOf } from './api/client.js';
export { createMemoryBackend } from './memory/backend.js';
export { ForcedReleaseError } from './forced-release-error.js';
export type { ForcedEvent, LeaderChange, ListOptions, LockHolder, LockInspection, ObserveOptions } from './api/operations.js';
export type {
  Acquirable,
  ElectOptions,
  Election,
  MultiLock,
  ReadWriteLock,
  Semaphore,
  SemaphoreOptions,
  Term,
} from './api/primitives.js';
export type { LastRun, RunContext, RunOnceOptions, RunOnceResult, RunOutcome } from './api/run-once.js';
export { maxPermits } from './primitives/semaphore.js';
export { defaultLockDefaults } from './config.js';
export { inOwnerFlow } from './owner.js';
export { lockClientToken } from './token.js';
