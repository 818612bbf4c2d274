import type { ElectionDriver, HoldDriver, MultiDriver, OperationsDriver, RunsDriver } from '../contract/drivers.js';

/**
 * The backend's methods the views call, each read as possibly absent: a subclass may remove one,
 * or add one memory has not (orderKeys, acquireMany, claimRun, shortenRun).
 */
type MemoryMethods = Pick<HoldDriver, 'renew' | 'release'> &
  Required<Pick<HoldDriver, 'validate'>> &
  Partial<MultiDriver & ElectionDriver & RunsDriver> &
  Required<Pick<OperationsDriver, 'inspect' | 'forceRelease' | 'listKeys'>>;

/** The memory backend's drivers beside its mutex and kinds. */
export interface MemoryDrivers {
  readonly multi: MultiDriver | undefined;
  readonly election: ElectionDriver | undefined;
  readonly operations: OperationsDriver | undefined;
  readonly runs: RunsDriver | undefined;
}

/**
 * The drivers as views over the backend's own methods (campaign, tryAcquireMany, inspect,
 * saveRun...), built at the first read: a subclass that overrides or removes one of them (the
 * tests' and the conformance suite's broken backends) changes the driver with it. A term and a
 * multi-lock's grants are memory mutex entries, so the backend's renew, validate and release keep them.
 */
export function memoryDrivers(backend: MemoryMethods): MemoryDrivers {
  const b = backend;
  const multi: MultiDriver | undefined =
    typeof b.tryAcquireMany === 'function' || typeof b.orderKeys === 'function' || typeof b.acquireMany === 'function'
      ? {
          ...(typeof b.acquireMany === 'function'
            ? { acquireMany: (requests, deadline, signal) => b.acquireMany!(requests, deadline, signal) }
            : {}),
          ...(typeof b.orderKeys === 'function' ? { orderKeys: (keys) => b.orderKeys!(keys) } : {}),
          ...(typeof b.tryAcquireMany === 'function' ? { tryAcquireMany: (requests) => b.tryAcquireMany!(requests) } : {}),
        }
      : undefined;
  const election: ElectionDriver | undefined =
    typeof b.campaign === 'function' && typeof b.leader === 'function'
      ? {
          campaign: (request, deadline, signal) => b.campaign!(request, deadline, signal),
          leader: (key) => b.leader!(key),
          ...(typeof b.leaderInfo === 'function' ? { leaderInfo: (key: string) => b.leaderInfo!(key) } : {}),
          renew: (grant, ttlMs) => b.renew(grant, ttlMs),
          release: (grant) => b.release(grant),
          validate: (grant) => b.validate(grant),
        }
      : undefined;
  const operations: OperationsDriver = {
    inspect: (key) => b.inspect(key),
    forceRelease: (key, by) => b.forceRelease(key, by),
    listKeys: (prefix) => b.listKeys(prefix),
  };
  const runs: RunsDriver | undefined =
    typeof b.saveRun === 'function' && typeof b.loadRun === 'function'
      ? {
          ...(typeof b.claimRun === 'function' ? { claimRun: (request) => b.claimRun!(request) } : {}),
          ...(typeof b.shortenRun === 'function' ? { shortenRun: (grant, keepMs) => b.shortenRun!(grant, keepMs) } : {}),
          saveRun: (key, runId, record, replaces) => b.saveRun!(key, runId, record, replaces),
          loadRun: (key) => b.loadRun!(key),
        }
      : undefined;
  return { multi, election, operations, runs };
}
