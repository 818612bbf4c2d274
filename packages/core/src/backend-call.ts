import { guardCall } from './adapter/call-guard.js';
import { DeadlineWheel } from './adapter/deadline-wheel.js';
import type { AttemptResult, Grant, LockBackend } from './backend.js';
import type { HoldKeeper } from './contract/drivers.js';

/** An adapter's call deadline when it declares none (LockBackend.callTimeoutMs). */
const defaultCallTimeoutMs = 10_000;
/** Core's safety net sits this far above the adapter's own deadline, which should fire first. */
export const safetyNetSlackMs = 250;

/** Core's safety nets for adapters that bound their own calls (LockBackend.boundsCalls), on one timer. */
const sharedDeadlines = new DeadlineWheel();

/** How core runs one backend call (see `callBackend`). */
export interface CallPolicy {
  /** Deadline; default: the backend's callTimeoutMs + slack. */
  readonly timeoutMs?: number;
  /** Release a grant that lands after core gave up (acquire calls) through this driver, the one that issued it. */
  readonly undoBy?: HoldKeeper;
  /** The attempt's lease ttl: how long that release is retried at most (a frozen server). */
  readonly leaseTtlMs?: number;
  /** close() cuts the call short (every call but close()'s own releases). Default true. */
  readonly closable?: boolean;
}

/** Where a call runs: the client's close() signal. */
export interface CallSite {
  readonly closing: AbortSignal;
}

export function callTimeoutOf(backend: LockBackend): number {
  return backend.callTimeoutMs ?? defaultCallTimeoutMs;
}

/**
 * Runs one backend call through the adapter kit's call guard: anything that is not already a
 * DeadboltError becomes a BackendUnavailableError naming the key and backend, a deadline a little
 * above the adapter's own is the safety net, close() cuts it short (no timer outlives close()),
 * and a grant that lands after core gave up is released rather than left behind.
 */
export function callBackend<T>(
  backend: LockBackend,
  action: string,
  key: string,
  fn: () => Promise<T>,
  policy: CallPolicy,
  site: CallSite,
): Promise<T> {
  return guardCall(fn, {
    action,
    key,
    backend: backend.name,
    endpoint: backend.endpoint,
    // A backstop only: the adapter's own deadline fires first, and a call may queue in the adapter
    // (a pool) before that deadline starts, so never tighter than the default.
    // An adapter that bounds its own calls (boundsCalls) needs no second timer per call.
    timeoutMs:
      policy.timeoutMs ??
      (backend.boundsCalls === true ? Number.POSITIVE_INFINITY : Math.max(defaultCallTimeoutMs, callTimeoutOf(backend) + safetyNetSlackMs)),
    // The remaining net (a native acquire's wait) on one shared timer for such adapters: a contended
    // hand-off otherwise arms and clears a Node timer of its own length per acquire.
    deadlines: backend.boundsCalls === true ? sharedDeadlines : undefined,
    signal: policy.closable === false ? undefined : site.closing,
    undo: policy.undoBy === undefined ? undefined : undoLateGrantOn(policy.undoBy),
    undoWithinMs: policy.leaseTtlMs,
  });
}

/** The grant inside a late answer of tryAcquire (an AttemptResult) or of a native acquire (a Grant). */
function lateGrant(late: unknown): Grant | undefined {
  if (typeof late !== 'object' || late === null) return undefined;
  const result = late as Partial<AttemptResult> & Partial<Grant>;
  if (result.acquired === true) return (result as { grant: Grant }).grant;
  if (result.acquired === undefined && typeof result.token === 'string' && typeof result.key === 'string') return late as Grant;
  return undefined;
}

type Undo = (late: unknown) => Promise<unknown> | undefined;

/** Each driver's undo, made once: not a closure per acquire. */
const undoers = new WeakMap<HoldKeeper, Undo>();

/** Releases the grant inside a late answer (see GuardedCall.undo) through `keeper`, the driver that issued it. */
export function undoLateGrantOn(keeper: HoldKeeper): Undo {
  let undo = undoers.get(keeper);
  if (undo === undefined) {
    undo = (late) => {
      const grant = lateGrant(late);
      return grant === undefined ? undefined : keeper.release(grant);
    };
    undoers.set(keeper, undo);
  }
  return undo;
}
