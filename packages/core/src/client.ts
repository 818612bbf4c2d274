import { inspectSafely } from './adapter/safe-inspect.js';
import type { LockClient, LockClientConfig } from './api/client.js';
import type { AcquireOptions, Lock, LockEvents } from './api/lock.js';
import type { ListOptions, LockInspection } from './api/operations.js';
import type { ElectOptions, Election, MultiLock, ReadWriteLock, Semaphore, SemaphoreOptions } from './api/primitives.js';
import type { LastRun, RunContext, RunOnceOptions, RunOnceResult } from './api/run-once.js';
import type { Capabilities } from './contract/capabilities.js';
import { Engine } from './engine/engine.js';
import { DeadboltElection } from './primitives/election.js';
import { acquireAll } from './primitives/multi-lock.js';
import { forceReleaseKey, inspectKey, listInspections } from './primitives/operations.js';
import { createReadWriteLock } from './primitives/read-write.js';
import { lastRun, runOnce } from './primitives/run-once/run-once.js';
import { createSemaphore } from './primitives/semaphore.js';

/**
 * The user-facing API (LockClient). Every policy (validation, waiting with notifications or
 * backoff, reentrancy bookkeeping, renewal, loss detection, events and telemetry) is the engine's
 * (engine/); each primitive (primitives/) runs on the same engine. Backends only make single
 * atomic attempts through their drivers (contract/).
 */
export class DeadboltClient implements LockClient {
  private readonly engine: Engine;

  constructor(config?: LockClientConfig) {
    this.engine = new Engine(config);
  }

  /** Distinguishes owners of different client instances, like Redisson's connection-manager id. */
  get id(): string {
    return this.engine.id;
  }

  get backend(): string {
    return this.engine.backend;
  }

  /** True to the clock as `held` is: a lease past its deadline (a stall) is declared lost first. O(held locks). */
  get heldCount(): number {
    return this.engine.heldCount;
  }

  capabilities(): Promise<Capabilities> {
    return this.engine.capabilities();
  }

  acquire(key: string, options?: AcquireOptions): Promise<Lock> {
    // A waiting acquire never resolves null (it throws LockTimeoutError): no promise layer to check it.
    return this.engine.acquireOrNull(key, options, true) as Promise<Lock>;
  }

  tryAcquire(key: string, options?: Omit<AcquireOptions, 'waitMs'>): Promise<Lock | null> {
    return this.engine.acquireOrNull(key, options, false);
  }

  withLock<T>(key: string, fn: (lock: Lock) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return this.engine.withKind(key, undefined, fn, options);
  }

  readWriteLock(key: string): ReadWriteLock {
    return createReadWriteLock(this.engine, key, this.engine.backend);
  }

  semaphore(key: string, options: SemaphoreOptions): Semaphore {
    return createSemaphore(this.engine, key, options, this.engine.backend);
  }

  acquireAll(keys: readonly string[], options?: AcquireOptions): Promise<MultiLock> {
    return acquireAll(this.engine, keys, options);
  }

  elect(name: string, options: ElectOptions): Election {
    return new DeadboltElection(this.engine, name, options);
  }

  runOnce<T>(name: string, fn: (context: RunContext) => Promise<T> | T, options: RunOnceOptions): Promise<RunOnceResult<T>> {
    return runOnce(this.engine, name, fn, options);
  }

  lastRun(name: string): Promise<LastRun | null> {
    return lastRun(this.engine, name);
  }

  inspect(key: string): Promise<LockInspection> {
    return inspectKey(this.engine, key);
  }

  forceRelease(key: string): Promise<boolean> {
    return forceReleaseKey(this.engine, key);
  }

  list(options?: ListOptions): AsyncIterable<LockInspection> {
    return listInspections(this.engine, options);
  }

  on<E extends keyof LockEvents>(event: E, listener: (...args: LockEvents[E]) => void): this {
    this.engine.emitter.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  off<E extends keyof LockEvents>(event: E, listener: (...args: LockEvents[E]) => void): this {
    this.engine.emitter.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  once<E extends keyof LockEvents>(event: E, listener: (...args: LockEvents[E]) => void): this {
    this.engine.emitter.once(event, listener as (...args: unknown[]) => void);
    return this;
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}

// console.log(client) must not print the backend's connections (and with them credentials).
inspectSafely(DeadboltClient, (client) => ({ backend: client.backend, heldCount: client.heldCount }));
