import type { LockBackend } from './backend.js';
import type { ElectionDriver, HoldDriver, MultiDriver, OperationsDriver, RunsDriver } from './drivers.js';

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

/** The one place core reads a backend's drivers (contract/drivers.ts). */
export function driversOf(backend: LockBackend): Drivers {
  let drivers = read.get(backend);
  if (drivers === undefined) {
    drivers = Object.freeze({
      mutex: backend,
      kinds: backend.kinds,
      multi: backend.multi,
      election: backend.election,
      operations: backend.operations,
      runs: backend.runs,
    });
    read.set(backend, drivers);
  }
  return drivers;
}
