import type { LockBackend } from './backend.js';
import type { AcquireRequest, BackendInspection, CampaignRequest, Grant, MultiAttemptResult, TermGrant } from './requests.js';

/**
 * DEPRECATED, delete with contract/legacy.ts once every adapter offers drivers: the old style of
 * the adapter contract, where every primitive's methods sit on the backend object. Core no longer
 * reads these (it reads the drivers, contract/drivers.ts); the adapter entry still exports them
 * for the adapters that have not moved yet.
 */

/**
 * Deprecated (the old style, read by contract/legacy.ts until every adapter offers drivers): an
 * election now comes as `LockBackend.election`, an ElectionDriver.
 *
 * The optional election part of the adapter contract (`client.elect`, `capabilities.election`).
 * A term is a grant: core renews it, releases it and declares it lost exactly as a lock, so a
 * leader's signal aborts before its lease (or session) can end on the server.
 */
export interface ElectionBackend extends LockBackend {
  /**
   * Waits to become the leader of `request.key`. Resolves with a grant whose `fence` is the term
   * (strictly increasing per election across leaders), or `undefined` at `deadline` or on abort,
   * leaving no candidacy behind.
   */
  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined>;
  /** The current leader's participant id, or undefined when there is none. */
  leader(key: string, layout?: string): Promise<string | undefined>;
  /** The leader's id with its term (the grant's fence), or undefined when there is none: what `observe()` reads. */
  leaderInfo?(key: string): Promise<{ readonly id: string; readonly term: number | undefined } | undefined>;
}

/** Deprecated with ElectionBackend: core reads `driversOf(backend).election`. */
export function isElectionBackend(backend: LockBackend): backend is ElectionBackend {
  const candidate = backend as Partial<ElectionBackend>;
  return typeof candidate.campaign === 'function' && typeof candidate.leader === 'function';
}

/** Deprecated (the old style, read by contract/legacy.ts): multi-key grants now come as `LockBackend.multi`, a MultiDriver. */
export interface MultiLockBackend extends LockBackend {
  /**
   * The one global order in which core takes keys when it takes them one by one (Redis Cluster:
   * slot, then key). Every client must compute the same order for the same set: a total order is
   * what rules out a cycle of waiters (Havender's "ordered resources", 1968). Default: code-unit order.
   */
  orderKeys?(fullKeys: readonly string[]): readonly string[];
  /** All or nothing in one atomic step; grants in the order of `requests`. Never waits. */
  tryAcquireMany?(requests: readonly AcquireRequest[]): Promise<MultiAttemptResult>;
  /**
   * Native waiting for every key: grants in the order of `requests`, or `undefined` at `deadline` or
   * on abort, in which case nothing may be left behind (as `LockBackend.acquire`).
   */
  acquireMany?(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<readonly Grant[] | undefined>;
}

/**
 * Deprecated (the old style, read by contract/legacy.ts until every adapter offers drivers): the
 * operator API now comes as `LockBackend.operations`, an OperationsDriver.
 *
 * The optional operator part of the adapter contract (`client.inspect`, `forceRelease`, `list`).
 * Keys are full keys (the client's prefix applied). A backend without these methods makes core
 * refuse with UnsupportedOperationError before any I/O.
 */
export interface OperationsBackend extends LockBackend {
  /** One read of every hold on `key`, across kinds (mutex, read, write, permit). */
  inspect(key: string): Promise<BackendInspection>;
  /**
   * Removes every hold on `key` in one atomic step, whoever holds it, and leaves a short-lived
   * marker naming `by` where a holder's failed renewal can read it (see `forcedBy`); holders the
   * backend can reach at once are told through their request's `onLost`. True when something was
   * removed.
   */
  forceRelease(key: string, by: string): Promise<boolean>;
  /** The full keys that start with `prefix` and hold something now (each once, any order). */
  listKeys(prefix: string): AsyncIterable<string>;
  /** Who forced this grant's hold away recently (the marker forceRelease left), read after a refused renewal. */
  forcedBy?(grant: Grant): Promise<string | undefined>;
}

/** Deprecated with OperationsBackend: core reads `driversOf(backend).operations`. */
export function isOperationsBackend(backend: LockBackend): backend is OperationsBackend {
  const candidate = backend as Partial<OperationsBackend>;
  return (
    typeof candidate.inspect === 'function' && typeof candidate.forceRelease === 'function' && typeof candidate.listKeys === 'function'
  );
}

/**
 * Deprecated (the old style, read by contract/legacy.ts until every adapter offers drivers): runs
 * now come as `LockBackend.runs`, a RunsDriver.
 *
 * The run-once part of the adapter contract. Core holds the policy (claim, abort at most, shorten
 * to at least, record); a backend supplies the server-side steps. Every backend stores the record
 * (`saveRun` / `loadRun`); a backend whose locks die with the process (a session: ZooKeeper,
 * PostgreSQL advisory) also claims on its server's clock (`claimRun` + `shortenRun`), and for the
 * others core claims with tryAcquire (ttl = lockAtMostForMs, no renewal), shortens with renew (which
 * must SET the expiry from the server's now) and ends with release.
 */
export interface RunOnceBackend {
  /**
   * One attempt to claim `request.key` for `request.ttlMs` from the server's now, outliving this
   * process. Undefined: someone holds it. Needed where `capabilities.lease` is 'session'.
   */
  claimRun?(request: AcquireRequest): Promise<Grant | undefined>;
  /**
   * Sets the claim to end `keepMs` from the server's now (0: ends it now), if it is still ours.
   * False: it was not. Absent: renew(grant, keepMs), or release(grant) for 0.
   */
  shortenRun?(grant: Grant, keepMs: number): Promise<boolean>;
  /**
   * Stores the job's record (opaque text) with its run id. With `replaces`, only if the stored
   * record's run id is still that one (a late runner never overwrites a newer run). True: stored.
   */
  saveRun?(key: string, runId: string, record: string, replaces?: string): Promise<boolean>;
  /** The stored record's text, or undefined. */
  loadRun?(key: string): Promise<string | undefined>;
}

export type RunCapableBackend = LockBackend & RunOnceBackend;

/** Deprecated with RunOnceBackend: core reads `driversOf(backend).runs`. */
export function storesRuns(backend: LockBackend): backend is LockBackend & Required<Pick<RunOnceBackend, 'saveRun' | 'loadRun'>> {
  const candidate = backend as RunCapableBackend;
  return typeof candidate.saveRun === 'function' && typeof candidate.loadRun === 'function';
}
