import type { AcquireOptions, Lock } from '../api/lock.js';
import type { LockBackend } from '../contract/backend.js';
import type { HoldKeeper } from '../contract/drivers.js';
import { driversOf } from '../contract/drivers-of.js';
import type { Grant, LockKind } from '../contract/requests.js';
import { currentFlow, newFlow, runInFlow } from '../owner.js';
import { kindLeaseId } from '../primitives/reentry.js';
import type { AcquirePlan } from './acquire-plan.js';
import { Acquiring } from './acquire.js';
import { callTimeoutOf, safetyNetSlackMs } from './backend-call.js';

/**
 * The one implementation of every policy (validation, waiting, reentrancy bookkeeping, renewal,
 * loss, events, telemetry), built floor by floor: engine-core.ts (backend, lease table, events,
 * calls, close), holding.ts (renew, validate, release, loss), acquire.ts (plan -> attempt -> wait
 * -> grant). The client (client.ts) is its face; each primitive (primitives/) is given the engine
 * and runs on these same policies, so a grant it obtains is kept exactly like a lock's.
 */
export class Engine extends Acquiring {
  /** The client's single-key acquire (a waiting acquire never resolves null). */
  acquire(key: string, options: AcquireOptions | undefined): Promise<Lock> {
    return this.acquireOrNull(key, options, true) as Promise<Lock>;
  }

  /** The mutex's acquisition with a kind of hold attached (read-write locks, semaphores). */
  acquireKind(key: string, kind: LockKind | undefined, options: AcquireOptions | undefined, mayWait: boolean): Promise<Lock | null> {
    return this.acquireOrNull(key, options, mayWait, kind);
  }

  /** Acquire, run `fn` as one owner flow with the hold (auto-renewed), release even if `fn` throws. */
  async withKind<T>(
    key: string,
    kind: LockKind | undefined,
    fn: (lock: Lock) => Promise<T> | T,
    options: AcquireOptions | undefined,
  ): Promise<T> {
    // The body runs as one flow, so nested acquires of the same key inside it re-enter.
    const flow = currentFlow() ?? newFlow();
    const lock = await runInFlow(
      flow,
      () => this.acquireOrNull(key, { ...options, autoRenew: options?.autoRenew ?? true }, true, kind) as Promise<Lock>,
    );
    let failed = false;
    try {
      return await runInFlow(flow, () => fn(lock));
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      try {
        await lock.release();
      } catch (releaseError) {
        // The body's own error matters more; a failed release is reported, not allowed to mask it.
        // biome-ignore lint/correctness/noUnsafeFinally: deliberate, only when the body succeeded (nothing to mask)
        if (!failed) throw releaseError;
        this.reportError(key, releaseError);
      }
    }
  }

  /** Whether this client holds a live mutex lease on (fullKey, owner): a re-entry, which only the single-key path counts. */
  holds(fullKey: string, owner: string): boolean {
    return this.leases.get(kindLeaseId(fullKey, owner, undefined, ''))?.lost === false;
  }

  /** Adopts a grant a primitive obtained as a held lock, kept by `keeper`, the driver that issued it. */
  adopt(backend: LockBackend, plan: AcquirePlan, grant: Grant, sentAt: number, startedAt: number, keeper: HoldKeeper): Lock {
    return this.grantLock(backend, plan, grant, sentAt, startedAt, keeper);
  }

  /**
   * A primitive's guarded call (typed errors, a safety-net deadline, close() cuts it short, a late
   * single grant is given back through `undoBy`, the driver that issued it: default the mutex's).
   * `waitUntil`: a native wait's own deadline, added to the net. `release`: a tidy-up release that
   * close() must not cut short.
   */
  callFor<T>(
    backend: LockBackend,
    action: string,
    key: string,
    fn: () => Promise<T>,
    how?: { readonly waitUntil?: number; readonly release?: boolean; readonly undoBy?: HoldKeeper },
  ): Promise<T> {
    if (how?.release) return this.call(backend, action, key, fn, { closable: false });
    const undoBy = how?.undoBy ?? driversOf(backend).mutex;
    if (how?.waitUntil === undefined) return this.call(backend, action, key, fn, { undoBy });
    const timeoutMs = Math.max(0, how.waitUntil - Date.now()) + callTimeoutOf(backend) + safetyNetSlackMs;
    return this.call(backend, action, key, fn, { undoBy, timeoutMs });
  }

  /** The prefix the client puts before every key: its own, or the backend's default. */
  prefixOf(backend: LockBackend): string {
    return this.configuredPrefix ?? backend.defaultPrefix ?? '';
  }
}
