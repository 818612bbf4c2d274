import type { Capabilities } from './capabilities.js';
import type { BackendDrivers } from './drivers.js';
import type { AcquireRequest, AttemptResult, Grant } from './requests.js';

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
   * each call a little above it and lets an acquire settle no later than waitMs + this.
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
