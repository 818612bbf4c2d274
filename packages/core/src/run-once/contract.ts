import type { AcquireRequest, Grant, LockBackend } from '../backend.js';

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
