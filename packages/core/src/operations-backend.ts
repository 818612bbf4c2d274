import type { Grant, LockBackend } from './backend.js';
import type { LockHolder } from './operations-types.js';

/** What a backend reads for `inspect`: holds and, where it queues them, waiters. */
export interface BackendInspection {
  readonly holders: readonly LockHolder[];
  readonly waiters?: number;
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

/** How long a forceRelease marker stays: longer than any renewal interval a holder may have (ttl/3). */
export const forcedMarkerMs = 10 * 60_000;
