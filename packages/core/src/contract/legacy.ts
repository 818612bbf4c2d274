import type { LockBackend } from '../backend.js';
import type { ElectionDriver, HoldDriver, MultiDriver, OperationsDriver, RunsDriver } from './drivers.js';

/**
 * TRANSITIONAL: delete once every adapter offers drivers (contract v2, contract/drivers.ts).
 *
 * The one place where core reads a backend's drivers. A backend that offers a driver is read as
 * it is; one that does not yet (the old style: every primitive's methods on the backend object,
 * its renew and release telling the grants apart) is read as the driver itself, so each adapter
 * can move on its own. Once all have moved, `driversOf` keeps only the `backend.x` reads.
 */

/** Every driver of one backend, as core routes holds to them. */
export interface Drivers {
  /** The mutex's driver: the backend object itself. */
  readonly mutex: HoldDriver;
  /** Read, write and permit holds; undefined when the backend has none. */
  readonly kinds: HoldDriver | undefined;
  readonly multi: MultiDriver | undefined;
  readonly election: ElectionDriver | undefined;
  readonly operations: OperationsDriver | undefined;
  readonly runs: RunsDriver | undefined;
}

/** Read once per backend: the hot path never looks drivers up again. */
const read = new WeakMap<LockBackend, Drivers>();

export function driversOf(backend: LockBackend): Drivers {
  let drivers = read.get(backend);
  if (drivers === undefined) {
    drivers = Object.freeze({
      mutex: backend,
      kinds: backend.kinds ?? oldKinds(backend),
      multi: backend.multi ?? oldMulti(backend),
      election: backend.election ?? oldElection(backend),
      operations: backend.operations ?? oldOperations(backend),
      runs: backend.runs ?? oldRuns(backend),
    });
    read.set(backend, drivers);
  }
  return drivers;
}

/** The old style's methods, read off the backend object. */
type OldStyle = LockBackend & Partial<MultiDriver & ElectionDriver & OperationsDriver & RunsDriver>;

/** Old style: the backend keeps its kinds itself, telling their grants apart from the mutex's. */
function oldKinds(backend: LockBackend): HoldDriver | undefined {
  return backend.capabilities.readWrite === true || backend.capabilities.semaphore === true ? backend : undefined;
}

/** Old style: orderKeys/tryAcquireMany/acquireMany on the backend; the grants are the mutex's to keep. */
function oldMulti(backend: OldStyle): MultiDriver | undefined {
  const has = typeof backend.orderKeys === 'function' || typeof backend.tryAcquireMany === 'function';
  return has || typeof backend.acquireMany === 'function' ? (backend as MultiDriver) : undefined;
}

/** Old style: campaign/leader/leaderInfo on the backend, terms renewed and released by the backend's renew/release. */
function oldElection(backend: OldStyle): ElectionDriver | undefined {
  return typeof backend.campaign === 'function' && typeof backend.leader === 'function' ? (backend as ElectionDriver) : undefined;
}

/** Old style: inspect/forceRelease/listKeys/forcedBy on the backend. */
function oldOperations(backend: OldStyle): OperationsDriver | undefined {
  const has = typeof backend.inspect === 'function' && typeof backend.forceRelease === 'function';
  return has && typeof backend.listKeys === 'function' ? (backend as OperationsDriver) : undefined;
}

/** Old style: claimRun/shortenRun/saveRun/loadRun on the backend. */
function oldRuns(backend: OldStyle): RunsDriver | undefined {
  return typeof backend.saveRun === 'function' && typeof backend.loadRun === 'function' ? (backend as RunsDriver) : undefined;
}
