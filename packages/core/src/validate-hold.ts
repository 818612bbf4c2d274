import type { Grant, LockBackend } from './backend.js';
import type { HoldKeeper } from './contract/drivers.js';
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
  const leases = [...new Set(handles.map((handle) => handle.lease))];
  // One question per keeper (the driver that issued the holds), and none if any keeper cannot answer.
  const byKeeper = new Map<HoldKeeper, Lease[]>();
  for (const lease of leases) {
    const group = byKeeper.get(lease.keeper);
    if (group === undefined) byKeeper.set(lease.keeper, [lease]);
    else group.push(lease);
  }
  for (const keeper of byKeeper.keys()) {
    if (keeper.validate === undefined) {
      throw new UnsupportedOperationError(
        'validate',
        `backend ${backend.name} cannot ask the server whether a grant still holds (it implements no validate); check lock.held, and fence the resource`,
        { key: multiLabel(keys), backend: backend.name },
      );
    }
  }
  if (!handles.every((handle) => handle.held)) return false;
  const label = multiLabel(keys);
  const groups = [...byKeeper];
  const answers = await Promise.all(
    groups.map(([keeper, group]) =>
      site.call(backend, label, () =>
        ask(
          keeper,
          group.map((lease) => lease.grant),
        ),
      ),
    ),
  );
  let valid = true;
  for (const [index, [, group]] of groups.entries()) {
    for (const [at, lease] of group.entries()) {
      const answer = answers[index]![at];
      if (answer !== true) valid = false;
      // Released while the question was out: that release, not a loss, is why the server says no.
      if (answer !== true && !lease.lost && lease.holds > 0) site.refused(lease);
    }
  }
  return valid && handles.every((handle) => handle.held);
}

function ask(keeper: HoldKeeper, grants: readonly Grant[]): Promise<readonly boolean[]> {
  if (grants.length === 1) return keeper.validate!(grants[0]!).then((answer) => [answer]);
  if (keeper.validateMany) return keeper.validateMany(grants);
  return Promise.all(grants.map((grant) => keeper.validate!(grant)));
}
