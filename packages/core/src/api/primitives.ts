import type { AcquireOptions, Lock } from './lock.js';
import type { LeaderChange, ObserveOptions } from './operations.js';

/** One side of a primitive: the read or write side of a read-write lock, or a semaphore. */
export interface Acquirable {
  /** The user's key (without the client's prefix). */
  readonly key: string;
  /** Waits up to `waitMs` (the client's default otherwise), then LockTimeoutError. */
  acquire(options?: AcquireOptions): Promise<Lock>;
  /** One attempt, no waiting: null when the hold cannot be granted right now. */
  tryAcquire(options?: Omit<AcquireOptions, 'waitMs'>): Promise<Lock | null>;
  /** Acquire, run `fn` with the hold (auto-renewed), release even if `fn` throws. */
  withLock<T>(fn: (lock: Lock) => Promise<T> | T, options?: AcquireOptions): Promise<T>;
}

/**
 * A read-write lock: any number of readers at once, or one writer and no reader. Waiters are
 * served in arrival order where the backend queues (consecutive readers together), so neither side
 * starves. A write holder may take the read lock (downgrade); a read holder asking for the write
 * lock gets LockUpgradeError.
 */
export interface ReadWriteLock {
  readonly key: string;
  readonly read: Acquirable;
  readonly write: Acquirable;
}

/** A counting semaphore: at most `permits` holders at once. Each acquire is one more permit (no re-entry). */
export interface Semaphore extends Acquirable {
  readonly permits: number;
}

export interface SemaphoreOptions {
  /** How many holders at once (a positive integer). Every client of one key must agree on it. */
  readonly permits: number;
}

/** Several locks held as one (`client.acquireAll`): taken all or nothing, released together. */
export interface MultiLock extends AsyncDisposable {
  /** The keys, in the order they were taken (the global order, not necessarily the caller's). */
  readonly keys: readonly string[];
  readonly owner: string;
  /** Each key's fencing token, where the backend fences (else undefined). */
  readonly fences: ReadonlyMap<string, number | undefined>;
  /** The per-key locks, in the order they were taken. */
  readonly locks: readonly Lock[];
  /** Aborts as soon as any of the locks is lost (reason: its LockLostError); reading it checks every lock's deadline. */
  readonly signal: AbortSignal;
  /** True until released, or until any one of the locks is lost. */
  readonly held: boolean;
  /** Throws LockLostError unless every lock is held and within its local deadline: call it just before a protected write. */
  assertHeld(): void;
  /**
   * True only while every key's grant still holds on the server (one round trip per connection
   * where the backend batches); false once released or when any key is gone. See Lock.validate.
   */
  validate(): Promise<boolean>;
  /** Renews every lock; rejects with the first LockLostError if any is gone. */
  renew(): Promise<void>;
  /** Releases every lock, in reverse order. Idempotent. */
  release(): Promise<void>;
}

/** Options of `client.elect`. Unknown keys are rejected. */
export interface ElectOptions {
  /** This participant's id: what `leader()` returns while we lead (Curator: the participant id). */
  readonly id: string;
  /** Lease length of a term in ms, renewed automatically. Default: the client's ttl. */
  readonly ttlMs?: number;
  /** Ends the candidacy: the iteration rejects with the signal's reason and any term is released. */
  readonly signal?: AbortSignal;
  /** ZooKeeper only: 'latch' (Curator LeaderLatch, the default) or 'selector' (Curator LeaderSelector). */
  readonly layout?: 'latch' | 'selector';
}

/** One term of leadership. */
export interface Term {
  /** Strictly increasing per election across all leaders: pass it to resources as a fencing token. */
  readonly term: number;
  /** Aborts when the leadership is lost (session expiry, failed renewal) or given up; reading it checks the term's deadline. */
  readonly signal: AbortSignal;
  /** Throws LockLostError unless we still lead within the term's local deadline: call it just before a protected write. */
  assertHeld(): void;
  /** Our participant id. */
  readonly id: string;
  /** True only while the server still holds this term's grant; false once given up or lost. See Lock.validate. */
  validate(): Promise<boolean>;
}

/**
 * A candidacy in one election. Iterate it: each value is a term during which we lead; the term ends
 * when the loop body finishes (the next iteration starts a new candidacy, as Curator
 * LeaderSelector's autoRequeue) or when its signal aborts. Leaving the loop resigns. An outage does
 * not end the candidacy: failed campaigns are reported on the client's 'error' event and tried
 * again; only resign(), the `signal` option and the client's close() end it.
 */
export interface Election extends AsyncIterable<Term>, AsyncDisposable {
  readonly name: string;
  readonly id: string;
  /** The current leader's id, or null when there is none. */
  leader(): Promise<string | null>;
  /** Gives up the current term (if any) and leaves the election: the iteration ends. Idempotent. */
  resign(): Promise<void>;
  /**
   * The leader now, then each change of leader or term, for as long as `options.signal` (or the
   * client) lives; needs no candidacy (observing does not join the election). Reads the leader every
   * `intervalMs` (250): a change shorter than that can go unseen.
   */
  observe(options?: ObserveOptions): AsyncIterable<LeaderChange>;
}
