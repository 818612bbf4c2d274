import type { BackendDrivers } from './contract/drivers.js';

/**
 * The adapter contract. A backend does one atomic thing per call; every policy (waiting, backoff,
 * reentrancy bookkeeping, renewal scheduling, events, validation) lives once in core, the way
 * madelson/DistributedLock keeps busy-waiting and lease monitoring out of its providers.
 */

/** What a backend promises. Core and the conformance suite read these; so should users. */
export interface Capabilities {
  /** Under partitions and failover: CP keeps safety (quorum), AP keeps availability (may lose locks). */
  readonly consistency: 'CP' | 'AP';
  /** Whether grants carry a per-key, strictly increasing fencing token. */
  readonly fencing: boolean;
  /** 'server': the server counts re-entries of one owner; 'client': core counts them. */
  readonly reentrant: 'server' | 'client';
  /** Whether `waitForChange` (or a native blocking `acquire`) tells a waiter about a release. */
  readonly notifications: boolean;
  /** 'ttl': the lock expires by time unless renewed; 'session': it lives as long as a connection/session. */
  readonly lease: 'ttl' | 'session';
  /** Whose clock decides expiry. 'client' (redis getset) means skewed clocks can break exclusion. */
  readonly clock: 'server' | 'client';
  /** The shortest lease the backend can honour (memcached expiry is in whole seconds: 1000). */
  readonly minTtlMs: number;
  /** The longest key, in UTF-8 bytes, after the client's prefix is applied. */
  readonly maxKeyBytes: number;
  /** Waiters are granted the lock in arrival order by the server (a queue), with no barging. Absent: false. */
  readonly fair?: boolean;
  /** Read-write locks (`client.readWriteLock`). Absent: false. */
  readonly readWrite?: boolean;
  /** Counting semaphores (`client.semaphore`). Absent: false. */
  readonly semaphore?: boolean;
  /** Multi-key locks (`client.acquireAll`): 'atomic' in one server step, 'ordered' in a global key order. Absent: 'ordered' through core. */
  readonly multi?: 'atomic' | 'ordered' | 'none';
  /** Leader election (`client.elect`) with a strictly increasing term. Absent: false. */
  readonly election?: boolean;
  /**
   * Lock-delay (`lockDelayMs`): after a lease runs out without a release, the server keeps the key
   * from others for that long more, on its own clock. Absent: false (an acquire with a delay is refused).
   */
  readonly lockDelay?: boolean;
  /**
   * The operator API (`client.inspect`, `forceRelease`, `list`): the backend offers an operations
   * driver (`LockBackend.operations`). Absent: false (those calls refuse with UnsupportedOperationError).
   */
  readonly operations?: boolean;
}

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

/**
 * What a backend implements: it is the mutex's driver (HoldDriver), and offers the other
 * primitives through optional drivers (contract/drivers.ts). Optional methods unlock better
 * behaviour; core works without them.
 */
export interface LockBackend extends BackendDrivers {
  /** Names the backend in errors, logs and spans: 'memory', 'redis:setnx', 'postgres:lease'. No credentials. */
  readonly name: string;
  readonly capabilities: Capabilities;
  /**
   * The key prefix used when the user configures none (redis: 'deadbolt:'). Core owns prefixing: it
   * reads `prefix` from the options object or the URL's `?prefix=` (empty = no prefix) and hands the
   * backend full keys, so backends must ignore a `prefix` URL parameter.
   */
  readonly defaultPrefix?: string;
  /** Where it connects, for error messages: `host:port[,host:port]`. Never a URL or a credential. */
  readonly endpoint?: string;
  /**
   * The adapter's own deadline of one call (its command or statement timeout), in ms. Core bounds
   * each call a little above it and lets an acquire settle no later than waitMs + this (issue 14).
   * Absent: 10 000.
   */
  readonly callTimeoutMs?: number;
  /**
   * True when the adapter bounds every call it is given by `callTimeoutMs` itself (the adapter kit's
   * guardCall with a deadline, settling with a typed error): core then adds no safety-net timer to
   * tryAcquire, release and renew (a timer per call showed in the uncontended profile). A native
   * `acquire` wait keeps core's bound (waitMs + callTimeoutMs + slack), on one shared timer.
   */
  readonly boundsCalls?: boolean;

  /** One atomic attempt. Never waits for the lock to become free. */
  tryAcquire(request: AcquireRequest): Promise<AttemptResult>;

  /**
   * Optional native waiting: the server queues us (blocking advisory lock, ZooKeeper's predecessor
   * watch). It makes its own first attempt and calls `request.onContended` when it finds the lock
   * held. Resolves with a grant, or `undefined` when `deadline` (Date.now() ms) passes or `signal`
   * aborts; must leave nothing behind in either case. When present, core calls it instead of
   * tryAcquire (+ waitForChange) whenever the caller may wait.
   */
  acquire?(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined>;

  /**
   * Extends the lease if the grant is still ours (atomic compare-and-extend). False: it is gone.
   * A backend with its own validity (redlock) may move `grant.validUntil` forward before resolving.
   */
  renew(grant: Grant, ttlMs: number): Promise<boolean>;

  /** Renews many grants in one round trip per connection. Core batches auto-renewals through it. */
  renewMany?(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]>;

  /** Deletes the lock only if the grant is still ours (atomic compare-and-delete). False: it was not. */
  release(grant: Grant): Promise<boolean>;

  /**
   * One read, no write: true only while this exact grant (its token, not merely its key or owner)
   * still holds on the server, by the server's clock where it has one; false when it was released,
   * expired, taken by another or its session ended. Throws when the server cannot be asked. Core
   * sends it only the grants this object issued (each driver validates its own). Absent:
   * `lock.validate()` refuses with UnsupportedOperationError before any I/O.
   */
  validate?(grant: Grant): Promise<boolean>;

  /** validate() for many grants in one round trip per connection (a multi-lock's keys). */
  validateMany?(grants: readonly Grant[]): Promise<readonly boolean[]>;

  /**
   * Resolves when the lock on `key` may have become free (a release notification), or at the latest
   * after `maxWaitMs`; rejects only on abort. Backends without notifications leave it out and core polls.
   */
  waitForChange?(key: string, maxWaitMs: number, signal: AbortSignal): Promise<void>;

  /**
   * A hint for a refused primitive: where this backend offers the missing capability (Redis: "use
   * ?mode=fair"). Core adds it to the UnsupportedOperationError it throws. Absent: no hint.
   */
  capabilityHint?(capability: keyof Capabilities): string | undefined;

  /** Frees every socket and timer. Locks still held are left to expire (or their sessions end). */
  close(): Promise<void>;
}

/**
 * Builds a backend from configuration. `url` is the parsed URL when the user gave one;
 * `options` is the object form's backend options. Must not do I/O: connect lazily.
 */
export type BackendFactory = (config: BackendConfig) => LockBackend;

export interface BackendConfig {
  /** The parsed URL. For a host list (`a:1,b:2`) only the first host is in it: read `urlText`. */
  readonly url?: URL;
  /** The URL exactly as the user wrote it: backends with host lists parse their hosts from it. */
  readonly urlText?: string;
  readonly options: Readonly<Record<string, unknown>>;
}
