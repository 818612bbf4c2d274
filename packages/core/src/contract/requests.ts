import type { LockHolder } from '../api/operations.js';

/**
 * The adapter contract. A backend does one atomic thing per call; every policy (waiting, backoff,
 * reentrancy bookkeeping, renewal scheduling, events, validation) lives once in core, the way
 * madelson/DistributedLock keeps busy-waiting and lease monitoring out of its providers.
 */

/**
 * What kind of hold a request asks for. A request without one asks for the plain exclusive lock
 * (the mutex). Core sends a kind only to a backend whose capabilities declare it (`readWrite`,
 * `semaphore`); a backend keeps the kinds of one key apart from its mutex and from each other
 * where it can (ZooKeeper shares the path, as Curator does, but the node names differ).
 */
export type LockKind =
  | {
      readonly type: 'read';
      /**
       * Set when the same owner holds the write lock of this key (a downgrade): the read must be
       * granted at once, beside that write grant and ahead of every queued writer (Curator after
       * CURATOR-621), so that releasing the write keeps queued writers out until the read goes.
       */
      readonly downgradeOf?: Grant;
    }
  | { readonly type: 'write' }
  | {
      readonly type: 'permit';
      /** The semaphore's size: at most this many permits of the key are held at once. */
      readonly permits: number;
    };

/** One attempt to take a lock, as core hands it to a backend. Already validated. */
export interface AcquireRequest {
  /** The kind of hold (read, write, permit); absent for the plain mutex. See LockKind. */
  readonly kind?: LockKind;
  /** The full key: the client's prefix + the user's key. */
  readonly key: string;
  /** Who asks. Stable for one owner (a flow or an explicit `owner`), unique per client instance. */
  readonly owner: string;
  /** Lease length. For 'session' backends this is the keepalive period basis. */
  readonly ttlMs: number;
  /**
   * Lock-delay (only sent where `capabilities.lockDelay`; absent or 0: none): the server must keep
   * the key from other owners until ttl + this after the grant or the last renewal, unless it is
   * released. The holder's own validity stays ttl. Renewals keep the same delay: a backend that
   * enforces it records it in its grant.
   */
  readonly lockDelayMs?: number;
  /**
   * Called by the backend if it learns, by itself, that a granted lock is gone (a session expired, a
   * connection dropped). Core then aborts the lock's signal and emits 'lost'. Safe to call repeatedly.
   */
  readonly onLost: (grant: Grant, cause: Error) => void;
  /**
   * Called by a native `acquire` when it finds the lock held and waits behind another holder (at
   * most the first time matters): core emits 'contended'. Every native `acquire` must call it, as it
   * makes its own first attempt (core calls it instead of tryAcquire whenever the caller may wait).
   */
  readonly onContended?: () => void;
}

/** Proof of holding a lock. Backends may add fields; core treats everything but these as opaque. */
export interface Grant {
  readonly key: string;
  readonly owner: string;
  /** The random value that identifies this grant on the server (what compare-and-delete compares). */
  readonly token: string;
  /** Fencing token, strictly increasing per key across holders, where `capabilities.fencing`. */
  readonly fence?: number;
  /**
   * The request's lock-delay, kept by a backend that enforces it (see AcquireRequest.lockDelayMs):
   * each renewal sets the server's expiry to ttl + this again. Absent: none.
   */
  readonly lockDelayMs?: number;
  /**
   * Local time (Date.now()) at which the backend's own validity ends, when it knows the lease better
   * than core's "request sent + ttl" (redlock: a quorum's validity; fair redis: a queued grant that
   * started after the request was sent). When set it replaces core's bound; core reads it live, so a
   * backend may move it later (after a renewal or an extension).
   */
  validUntil?: number;
}

/** The answer to one attempt. */
export type AttemptResult =
  | { readonly acquired: true; readonly grant: Grant }
  | {
      readonly acquired: false;
      /** A hint: the holder's remaining lease (pttl), so a waiter never waits longer than that for news. */
      readonly retryAfterMs?: number;
    };

/** One candidacy, as core hands it to a backend. */
export interface CampaignRequest extends AcquireRequest {
  /** The participant id, stored where `leader()` (and other clients' tools, e.g. Curator) read it. */
  readonly candidate: string;
  /** A backend-specific layout of the election's nodes (ZooKeeper: 'latch' or 'selector'). */
  readonly layout?: string;
}

/**
 * A term's grant. A campaign can wait long before it wins: `sentAt` (local Date.now()) says when the
 * winning request was sent, and the lease runs from then, not from when the campaign began.
 * Session-leased backends may leave it out.
 */
export interface TermGrant extends Grant {
  readonly sentAt?: number;
}

/**
 * The optional multi-key part of the adapter contract (`client.acquireAll`). Core takes the keys one
 * by one in a single global order unless the backend offers something better: an atomic step
 * (one Redis script, one memory tick) or native queueing (one ZooKeeper `multi` that enqueues us
 * under every path at once, then a wait path by path).
 */
export type MultiAttemptResult =
  | { readonly acquired: true; readonly grants: readonly Grant[] }
  | {
      readonly acquired: false;
      /** A key that was busy: core waits for news about it before the next attempt. */
      readonly busyKey?: string;
      /** The busy holder's remaining lease, as in AttemptResult. */
      readonly retryAfterMs?: number;
    };

/** What a backend reads for `inspect`: holds and, where it queues them, waiters. */
export interface BackendInspection {
  readonly holders: readonly LockHolder[];
  readonly waiters?: number;
}
