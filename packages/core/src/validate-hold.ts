import type { Grant, LockBackend } from './backend.js';
import { UnsupportedOperationError } from './errors.js';
import type { Lease } from './lease.js';
import type { LockHandle } from './lock-handle.js';
import { multiLabel } from './multi-lock.js';

/** What validation needs of its client: the backend, guarded calls, and how a refused grant is declared lost. */
export interface ValidateSite {
  backend(): Promise<LockBackend>;
  /** One guarded backend call (typed errors within the deadline, as renew and release). */
  call<T>(backend: LockBackend, key: string, fn: () => Promise<T>): Promise<T>;
  /** The server says this grant no longer holds. */
  refused(lease: Lease): void;
}

/**
 * `lock.validate()` and `multiLock.validate()`: whether the server still holds every handle's exact
 * grant, in one call (one round trip per connection where the backend batches). A backend that
 * cannot answer is refused before any I/O; a handle released, lost or past its local deadline is
 * answered false without I/O. A grant the server no longer holds is declared lost: its signal
 * aborts and 'lost' is emitted, as after a refused renewal.
 */
export async function validateHolds(handles: readonly LockHandle[], site: ValidateSite): Promise<boolean> {
  const backend = await site.backend();
  const keys = handles.map((handle) => handle.key);
  if (backend.validate === undefined) {
    throw new UnsupportedOperationError(
      'validate',
      `backend ${backend.name} cannot ask the server whether a grant still holds (it implements no validate); check lock.held, and fence the resource`,
      { key: multiLabel(keys), backend: backend.name },
    );
  }
  if (!handles.every((handle) => handle.held)) return false;
  const leases = [...new Set(handles.map((handle) => handle.lease))];
  const grants = leases.map((lease) => lease.grant);
  const answers = await site.call(backend, multiLabel(keys), () => ask(backend, grants));
  for (const [index, lease] of leases.entries()) {
    // Released while the question was out: that release, not a loss, is why the server says no.
    if (answers[index] !== true && !lease.lost && lease.holds > 0) site.refused(lease);
  }
  return answers.every((answer) => answer === true) && handles.every((handle) => handle.held);
}

function ask(backend: LockBackend, grants: readonly Grant[]): Promise<readonly boolean[]> {
  if (grants.length === 1) return backend.validate!(grants[0]!).then((answer) => [answer]);
  if (backend.validateMany) return backend.validateMany(grants);
  return Promise.all(grants.map((grant) => backend.validate!(grant)));
}
