import type {
  AcquireRequest,
  AttemptResult,
  BackendInspection,
  CampaignRequest,
  Grant,
  MultiAttemptResult,
  TermGrant,
} from './requests.js';

/**
 * Contract v2: a backend is a set of drivers, one per primitive, and every hold goes back to the
 * driver that issued it (etcd's `concurrency.Mutex`: the object that locks is the one that
 * unlocks; Curator's `LockInternals` over a one-method driver). Core records the issuing driver on
 * each lease, batches renewals per driver, and sends renew, release and validate of a hold to that
 * driver only: no adapter ever has to work out from a grant which of its algorithms issued it.
 *
 * The backend object itself is the mutex's driver. Beside it, optional drivers:
 * - `kinds`: read, write and permit holds (requests always carry `kind`);
 * - `multi`: all-or-nothing multi-key grants;
 * - `election`: candidacies and terms;
 * - `operations`: the operator API (inspect, forceRelease, list);
 * - `runs`: run-once claims and records.
 */

/**
 * What issues and keeps holds: one atomic attempt, an optional native wait, and compare-and-act
 * renew and release of the grants it issued (and of no others).
 */
export interface HoldDriver {
  /** One atomic attempt. Never waits for the lock to become free. */
  tryAcquire(request: AcquireRequest): Promise<AttemptResult>;
  /**
   * Optional native waiting (a server-side queue, a predecessor watch). It makes its own first
   * attempt (core calls it instead of tryAcquire whenever the caller may wait) and calls
   * `request.onContended` when it finds the lock held. Resolves with a grant, or `undefined` when
   * `deadline` (Date.now() ms) passes or `signal` aborts; leaves nothing behind in either case.
   */
  acquire?(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined>;
  /**
   * Extends the lease if the grant is still ours (atomic compare-and-extend). False: it is gone.
   * A driver with its own validity (redlock) may move `grant.validUntil` forward before resolving.
   */
  renew(grant: Grant, ttlMs: number): Promise<boolean>;
  /** Renews many of this driver's grants in one round trip per connection; auto-renewal batches through it. */
  renewMany?(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]>;
  /** Deletes the hold only if the grant is still ours (atomic compare-and-delete). False: it was not. */
  release(grant: Grant): Promise<boolean>;
  /**
   * One read, no write: true only while this exact grant (its token, not merely its key or owner)
   * still holds on the server, by the server's clock where it has one; false when it was released,
   * expired, taken by another or its session ended. Throws when the server cannot be asked. Absent:
   * `lock.validate()` refuses with UnsupportedOperationError before any I/O.
   */
  validate?(grant: Grant): Promise<boolean>;
  /** validate() for many grants in one round trip per connection. */
  validateMany?(grants: readonly Grant[]): Promise<readonly boolean[]>;
  /**
   * Resolves when the lock on `key` may have become free, or at the latest after `maxWaitMs`;
   * rejects only on abort. Absent: core polls with backoff.
   */
  waitForChange?(key: string, maxWaitMs: number, signal: AbortSignal): Promise<void>;
}

/**
 * What keeps a hold once it is granted: renewal, release and validation of the grants its driver
 * issued. Core records one on every lease (a HoldDriver, or the election driver for a term).
 */
export type HoldKeeper = Pick<HoldDriver, 'renew' | 'renewMany' | 'release' | 'validate' | 'validateMany'>;

/** Read, write and permit holds: a HoldDriver whose requests always carry `kind`. */
export type KindsDriver = HoldDriver;

/** All-or-nothing grants of several keys. */
export interface MultiDriver {
  /** The global order in which this backend takes keys (absent: code-unit order). */
  orderKeys?(fullKeys: readonly string[]): readonly string[];
  /** All or nothing in one atomic step; grants in the order of `requests`. Never waits. */
  tryAcquireMany?(requests: readonly AcquireRequest[]): Promise<MultiAttemptResult>;
  /** A native all-or-nothing wait; makes its own first attempt. */
  acquireMany?(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<readonly Grant[] | undefined>;
  /**
   * The driver that renews, validates and releases the grants this driver issues. Absent: the
   * backend's mutex driver (the grants are plain mutex holds, taken together).
   */
  readonly keeper?: HoldDriver;
}

/** Candidacies and terms: a term is renewed, validated and released here, never by the mutex. */
export interface ElectionDriver {
  /** Waits until this candidate leads (a term granted) or `deadline`/`signal` ends the wait. */
  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined>;
  /** The current leader's participant id, or undefined when there is none. */
  leader(key: string, layout?: string): Promise<string | undefined>;
  /** The leader's id with its term, or undefined when there is none: what `observe()` reads. */
  leaderInfo?(key: string): Promise<{ readonly id: string; readonly term: number | undefined } | undefined>;
  renew(grant: Grant, ttlMs: number): Promise<boolean>;
  renewMany?(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]>;
  release(grant: Grant): Promise<boolean>;
  validate?(grant: Grant): Promise<boolean>;
}

/**
 * The operator API: reads and takes back holds of any owner. Gated by `capabilities.operations`:
 * inspect is always offered; forceRelease and listKeys only where the backend can answer them
 * (core refuses a missing one before any I/O).
 */
export interface OperationsDriver {
  /** One read of every hold on `key`, across kinds (mutex, read, write, permit). */
  inspect(key: string): Promise<BackendInspection>;
  /** Removes every hold on `key`, leaving a marker naming `by` where the holder can read it. */
  forceRelease?(key: string, by: string): Promise<boolean>;
  /** The full keys that start with `prefix` and hold something now (each once, any order). */
  listKeys?(prefix: string): AsyncIterable<string>;
  /** Who forced this grant's hold away recently, read after a refused renewal. */
  forcedBy?(grant: Grant): Promise<string | undefined>;
}

/** Run-once claims on the server's clock, and the record of the last run. */
export interface RunsDriver {
  /** One atomic claim of a run (no renewal); undefined when another claim stands. */
  claimRun?(request: AcquireRequest): Promise<Grant | undefined>;
  /** Shortens a claim to `keepMs` from now on the server, if it is still ours. */
  shortenRun?(grant: Grant, keepMs: number): Promise<boolean>;
  /** Stores a run's record (conditional on `replaces` when given). */
  saveRun(key: string, runId: string, record: string, replaces?: string): Promise<boolean>;
  /** The stored record's text, or undefined. */
  loadRun(key: string): Promise<string | undefined>;
}

/** The optional drivers a backend offers beside its mutex. */
export interface BackendDrivers {
  readonly kinds?: KindsDriver;
  readonly multi?: MultiDriver;
  readonly election?: ElectionDriver;
  readonly operations?: OperationsDriver;
  readonly runs?: RunsDriver;
}

/** How long a forceRelease marker stays: longer than any renewal interval a holder may have (ttl/3). */
export const forcedMarkerMs = 10 * 60_000;
