import type { Capabilities } from '../contract/capabilities.js';
import type { LockBackend } from '../contract/backend.js';
import type { AcquireOptions, Lock, LockDefaults, LockEvents } from './lock.js';
import type { ListOptions, LockInspection } from './operations.js';
import type { ElectOptions, Election, MultiLock, ReadWriteLock, Semaphore, SemaphoreOptions } from './primitives.js';
import type { LastRun, RunContext, RunOnceOptions, RunOnceResult } from './run-once.js';

export interface LockClient {
  readonly backend: string;
  /** Resolves once the backend is loaded; its capabilities. */
  capabilities(): Promise<Capabilities>;
  acquire(key: string, options?: AcquireOptions): Promise<Lock>;
  /** One attempt, no waiting: null when another owner holds the lock. */
  tryAcquire(key: string, options?: Omit<AcquireOptions, 'waitMs'>): Promise<Lock | null>;
  /** Acquire, run `fn` with the lock (auto-renewed), release even if `fn` throws. */
  withLock<T>(key: string, fn: (lock: Lock) => Promise<T> | T, options?: AcquireOptions): Promise<T>;
  /** Several keys as one lock, all or nothing, taken in one global order (no deadlock). `waitMs` bounds the whole. */
  acquireAll(keys: readonly string[], options?: AcquireOptions): Promise<MultiLock>;
  /** Joins the leader election `name` as participant `options.id`; iterate the result for terms. */
  elect(name: string, options: ElectOptions): Election;
  /** A read-write lock on `key` (no I/O until acquired). Needs `capabilities.readWrite`. */
  readWriteLock(key: string): ReadWriteLock;
  /** A counting semaphore of `permits` on `key` (no I/O until acquired). Needs `capabilities.semaphore`. */
  semaphore(key: string, options: SemaphoreOptions): Semaphore;
  /**
   * Runs `fn` on at most one replica: one attempt, never waits. `{ ran: false }` when another holds
   * the name (it runs the job, or ran it less than lockAtLeastForMs ago). See RunOnceOptions.
   */
  runOnce<T>(name: string, fn: (context: RunContext) => Promise<T> | T, options: RunOnceOptions): Promise<RunOnceResult<T>>;
  /** The record of the job's last run, read from the server; null when it never ran. */
  lastRun(name: string): Promise<LastRun | null>;
  /** Every hold on `key` now (mutex, read, write, permit), in one read. UnsupportedOperationError where the backend cannot read them. */
  inspect(key: string): Promise<LockInspection>;
  /**
   * Removes every hold on `key` at once, whoever holds it: true when something was released. The
   * holders learn it at once where the backend can tell them, else at their next renewal: their
   * signal aborts with a LockLostError whose cause is a ForcedReleaseError. A holder still running
   * is no longer excluded: only a fence checked by the resource keeps its late writes out.
   */
  forceRelease(key: string): Promise<boolean>;
  /** The held keys under the client's prefix + `options.prefix`, each inspected. */
  list(options?: ListOptions): AsyncIterable<LockInspection>;
  on<E extends keyof LockEvents>(event: E, listener: (...args: LockEvents[E]) => void): this;
  off<E extends keyof LockEvents>(event: E, listener: (...args: LockEvents[E]) => void): this;
  once<E extends keyof LockEvents>(event: E, listener: (...args: LockEvents[E]) => void): this;
  /** Number of locks this client holds right now (leases, not re-entries). */
  readonly heldCount: number;
  /** Stops renewals and closes the backend. Held locks are released first (best effort). */
  close(): Promise<void>;
}

/**
 * Each scheme's backend options, by scheme. Adapter packages add theirs (declaration merging:
 * `declare module '@deadbolt/core' { interface BackendOptionsByScheme { redis: RedisBackendOptions } }`),
 * so `{ url: 'postgres://...', options: { pool: new pg.Pool() } }` fails type-checking once
 * `@deadbolt/postgres` is imported anywhere in the program.
 */
export interface BackendOptionsByScheme {
  memory: { readonly name?: string };
}

/** The scheme of a URL literal, lower-cased (`'Redis://h'` -> `'redis'`); `string` when not a literal. */
export type SchemeOf<Url extends string> = Url extends `${infer Scheme}://${string}` ? Lowercase<Scheme> : string;

/** The options type of a scheme: its adapter's when registered in BackendOptionsByScheme, else any record. */
export type BackendOptionsFor<Scheme extends string> = Scheme extends keyof BackendOptionsByScheme
  ? BackendOptionsByScheme[Scheme]
  : Readonly<Record<string, unknown>>;

/**
 * The object form of configuration. A URL string is the short form of `{ url }`. The type
 * parameters are inferred from a literal `url` or `backend` name to type `options` by scheme.
 */
export interface LockClientOptions<Url extends string = string, Name extends string = string> {
  /** `memory://`, `redis://host:6379?mode=setnx`, `postgres://...`, `zookeeper://...`, `memcached://...` */
  readonly url?: Url;
  /** A scheme name (when no url), or a ready backend instance (adapter tests, custom wiring). */
  readonly backend?: Name | LockBackend;
  /** Backend-specific options, passed to the backend factory beside the URL. */
  readonly options?: string extends Url ? BackendOptionsFor<Name> : BackendOptionsFor<SchemeOf<Url>>;
  /** Prepended to every key: namespaces that share a server never see each other's locks. */
  readonly prefix?: string;
  /** Defaults for acquire options. */
  readonly defaults?: Partial<LockDefaults>;
}

export type LockClientConfig<Url extends string = string, Name extends string = string> = string | LockClientOptions<Url, Name>;
