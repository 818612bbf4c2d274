import type { Capabilities } from './capabilities.js';
import type { BackendDrivers, HoldDriver } from './drivers.js';

/**
 * What a backend implements: it is the mutex's driver (HoldDriver: tryAcquire, renew, release and
 * the optional acquire, renewMany, validate, validateMany, waitForChange), and offers the other
 * primitives through optional drivers (contract/drivers.ts). Optional methods unlock better
 * behaviour; core works without them.
 */
export interface LockBackend extends HoldDriver, BackendDrivers {
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
