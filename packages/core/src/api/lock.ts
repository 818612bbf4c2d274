import type { ForcedEvent } from './operations.js';

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
