import type { Capabilities, LockBackend } from './backend.js';
import type { ElectOptions, Election, MultiLock } from './types-multi.js';
import type { ReadWriteLock, Semaphore, SemaphoreOptions } from './kinds.js';
import type { LastRun, RunContext, RunOnceOptions, RunOnceResult } from './run-once/types.js';
import type { ForcedEvent, ListOptions, LockInspection } from './operations-types.js';

/** Options of one acquire / tryAcquire / withLock call. Unknown keys are rejected. */
export interface AcquireOptions {
  /** Lease length in ms (positive integer, >= the backend's minTtlMs). Default: the client's (30 000). */
  readonly ttlMs?: number;
  /** How long to wait for a busy lock, in ms (0 = try once). Default: the client's (10 000). */
  readonly waitMs?: number;
  /** Renew at ttl/3 until released. Default: true (as Redisson's watchdog). */
  readonly autoRenew?: boolean;
  /** Cancels the wait. The lock is not acquired and nothing is left behind. */
  readonly signal?: AbortSignal;
  /** Explicit owner id; by default the current async flow (AsyncLocalStorage) owns the lock. */
  readonly owner?: string;
  /**
   * Lock-delay in ms (non-negative integer): if this hold ends without a release (its lease runs out,
   * its process dies), the server grants the key to no one else for this long more. A release never
   * delays. Refused with UnsupportedOperationError where the backend cannot enforce it
   * (`capabilities.lockDelay`). Default: the client's (0).
   */
  readonly lockDelayMs?: number;
  /**
   * When an automatic renewal has failed (or not answered) and less than this much of the lease is
   * left, 'expiring' is emitted and `lock.expiringSignal` aborts. Default: a third of the ttl.
   * Keep it below two thirds of the ttl: a renewal is due when two thirds are left.
   */
  readonly expiringThresholdMs?: number;
}

export interface LockDefaults {
  readonly ttlMs: number;
  readonly waitMs: number;
  readonly autoRenew: boolean;
  /** Also `?lockDelayMs=` in the URL. */
  readonly lockDelayMs: number;
  /** See AcquireOptions.expiringThresholdMs. Absent: a third of each lock's ttl. */
  readonly expiringThresholdMs?: number;
}

/** A held lock. Release it (or `await using` it); watch `signal` for loss. */
export interface Lock extends AsyncDisposable {
  readonly key: string;
  readonly owner: string;
  /** Strictly increasing per key across holders, where the backend supports fencing; else undefined. */
  readonly fence: number | undefined;
  /**
   * Aborts when the lock is known to be lost (reason: a LockLostError). Pass it to the protected work.
   * Reading `aborted`, `reason` or `throwIfAborted()` checks the local lease deadline first, so it is
   * exact even after a stall; an 'abort' listener runs only when the event loop gets to it.
   */
  readonly signal: AbortSignal;
  /** Extends the lease by its ttl. Rejects with LockLostError if the lock is gone. */
  renew(): Promise<void>;
  /** Gives the lock up. Idempotent for the holder; never removes another owner's lock. */
  release(): Promise<void>;
  /** True until released or lost; false at once when the local lease deadline has passed. */
  readonly held: boolean;
  /**
   * Asks the server, in one round trip, whether this exact grant still holds (as Chubby checks a
   * sequencer): false when it was released, expired, taken by another or its session ended (the
   * lock is then declared lost). A released or lost handle answers false without I/O. The answer
   * is a point in time: it can be stale when it arrives; only a fence checked by the resource
   * closes that gap. Rejects with BackendUnavailableError when the server does not answer in time,
   * UnsupportedOperationError (before any I/O) on a backend that cannot answer.
   */
  validate(): Promise<boolean>;
  /**
   * Aborts when the lock is in jeopardy (an automatic renewal failed or went unanswered and less
   * than `expiringThresholdMs` of the lease is left: the 'expiring' event) or lost, whichever comes
   * first, while there is still time to stop. It never un-aborts: a later successful renewal ends
   * the jeopardy ('expiring' may come again), not this signal. Reason: the renewal's error or the loss.
   */
  readonly expiringSignal: AbortSignal;
  /**
   * Synchronous check to call just before a protected write: throws LockLostError if the lock was
   * released, is lost, or is past its local lease deadline (say, after a GC pause). It narrows the
   * window, it cannot close it: the resource checking `fence` is the complete answer.
   */
  assertHeld(): void;
}

export interface LockEvents {
  acquired: [{ key: string; owner: string; fence: number | undefined; waitedMs: number; reentered: boolean }];
  released: [{ key: string; owner: string }];
  renewed: [{ key: string; owner: string }];
  lost: [{ key: string; owner: string; error: Error }];
  /**
   * An automatic renewal failed (or has not answered) and less than the threshold of the lease is
   * left: still held, but 'lost' follows unless a renewal gets through. Once per jeopardy; a
   * successful renewal ends it. `error` is the renewal's failure.
   */
  expiring: [{ key: string; owner: string; remainingMs: number; error: Error }];
  contended: [{ key: string; owner: string; attempt: number }];
  error: [{ key: string | undefined; error: Error }];
  /** This client took `key` back with forceRelease (`released`: something was held). */
  forced: [ForcedEvent];
}

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
