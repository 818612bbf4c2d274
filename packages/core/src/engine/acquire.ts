import type { AcquireOptions, Lock } from '../api/lock.js';
import type { LockBackend } from '../contract/backend.js';
import type { HoldKeeper } from '../contract/drivers.js';
import { driversOf } from '../contract/drivers-of.js';
import type { AcquireRequest, Grant, LockKind } from '../contract/requests.js';
import { backoffDelayMs } from '../backoff.js';
import { BackendUnavailableError, LockTimeoutError } from '../errors.js';
import { checkLockDelaySupported } from '../lock-delay.js';
import { currentFlow, newFlow } from '../owner.js';
import { checkKindSupported, kindLeaseId, kindName, planReentry } from '../primitives/reentry.js';
import { sleep } from '../sleep.js';
import { instruments, metricsOn, traced, tracingOn } from '../telemetry.js';
import { validateAcquireOptions, validateAgainstCapabilities } from '../validation.js';
import { Busy, type AcquirePlan, type AttemptContext, type Settled } from './acquire-plan.js';
import { callTimeoutOf, safetyNetSlackMs } from './backend-call.js';
import { Holding } from './holding.js';
import { Lease, leaseId } from './lease.js';
import { linkSignals } from './link-signals.js';
import { LockHandle } from './lock-handle.js';
import { waitForTurn } from './wait-for-turn.js';

/**
 * Acquiring a lock: plan (validated options, key, owner, driver) -> attempt (re-entry, tryAcquire,
 * or the driver's native wait) -> wait (notifications or backoff) -> grant (the lease, kept by the
 * driver that issued it).
 */
export abstract class Acquiring extends Holding {
  /**
   * The hot path, without promise layers of its own: every `async` function and every `await` of an
   * inner async result is another promise and microtask turn per acquire (the uncontended profile).
   * Synchronous failures (validation, a closed client) still reach the caller as rejections.
   */
  acquireOrNull(key: string, options: AcquireOptions | undefined, mayWait: boolean, kind?: LockKind): Promise<Lock | null> {
    const backend = this.loaded;
    if (backend === undefined) return this.acquireOnceLoaded(key, options, mayWait, kind);
    let plan: AcquirePlan;
    try {
      validateAcquireOptions(key, options, this.backendLabel, mayWait);
      this.assertOpen(key);
      plan = this.plan(backend, key, options, mayWait, kind);
      plan.signal?.throwIfAborted();
    } catch (error) {
      return Promise.reject(error);
    }
    // No tracer installed: no span, and none of the closures that describe one.
    if (!tracingOn()) return this.acquireWithPlan(backend, plan, mayWait);
    return traced(
      'acquire',
      () => ({ 'deadbolt.key': key, 'deadbolt.backend': backend.name, 'deadbolt.wait_ms': plan.waitMs, 'deadbolt.kind': kindName(kind) }),
      () => this.acquireWithPlan(backend, plan, mayWait),
    );
  }

  /** The first acquires, while the adapter package is still loading. */
  protected async acquireOnceLoaded(
    key: string,
    options: AcquireOptions | undefined,
    mayWait: boolean,
    kind?: LockKind,
  ): Promise<Lock | null> {
    validateAcquireOptions(key, options, this.backendLabel, mayWait);
    this.assertOpen(key);
    await this.backendLoading;
    return this.acquireOrNull(key, options, mayWait, kind);
  }

  plan(backend: LockBackend, key: string, options: AcquireOptions | undefined, mayWait: boolean, kind?: LockKind): AcquirePlan {
    const drivers = backend === this.loaded ? this.drivers! : driversOf(backend);
    if (kind) checkKindSupported(kind, backend, key);
    const prefix = this.configuredPrefix ?? backend.defaultPrefix ?? '';
    const ttlMs = options?.ttlMs ?? this.defaults.ttlMs;
    const flow = options?.owner === undefined ? currentFlow() : undefined;
    const plan: AcquirePlan = {
      userKey: key,
      fullKey: prefix + key,
      owner: options?.owner ?? `${this.id}:${flow ?? newFlow()}`,
      freshOwner: options?.owner === undefined && flow === undefined,
      ttlMs,
      waitMs: mayWait ? (options?.waitMs ?? this.defaults.waitMs) : 0,
      // As Redisson's watchdog: renew automatically unless the caller chose a lease length.
      autoRenew: options?.autoRenew ?? (options?.ttlMs === undefined ? this.defaults.autoRenew : false),
      // The client's default is the plain lock's; a kind refuses only a delay asked for explicitly.
      lockDelayMs: options?.lockDelayMs ?? (kind === undefined ? this.defaults.lockDelayMs : 0),
      expiringThresholdMs: options?.expiringThresholdMs ?? this.defaults.expiringThresholdMs,
      signal: options?.signal,
      kind,
      // A kind's holds are the kinds driver's (checkKindSupported made sure the backend offers kinds).
      driver: kind === undefined ? drivers.mutex : (drivers.kinds ?? drivers.mutex),
    };
    validateAgainstCapabilities(plan.fullKey, key, ttlMs, backend.capabilities, backend.name);
    checkLockDelaySupported(plan.lockDelayMs, backend, key, kind);
    return plan;
  }

  /**
   * The first attempt runs without the waiting loop (an uncontended acquire ends there); a busy
   * lock or a failed attempt goes on in `keepTrying`. Without a caller's signal, close()'s signal is
   * the acquire's whole abort signal: nothing to link, nothing to dispose.
   */
  protected acquireWithPlan(backend: LockBackend, plan: AcquirePlan, mayWait: boolean): Promise<Lock | null> {
    const startedAt = Date.now();
    // A kind goes in the request from the start: only a downgrade (a read while holding the write) asks for another.
    const request: AcquireRequest = {
      key: plan.fullKey,
      owner: plan.owner,
      ttlMs: plan.ttlMs,
      lockDelayMs: plan.lockDelayMs,
      kind: plan.kind,
      onLost:
        plan.kind === undefined
          ? this.onMutexLost
          : (grant, cause) => this.onBackendLost(kindLeaseId(grant.key, grant.owner, plan.kind, grant.token), grant, cause),
    };
    if (plan.signal !== undefined) return this.acquireWithSignal(backend, plan, mayWait, request, startedAt, plan.signal);
    const signal = this.closing;
    const at: AttemptContext = { deadline: startedAt + plan.waitMs, startedAt, signal, attempts: 1 };
    let first: Promise<Lock | Busy>;
    try {
      first = this.attemptOnce(backend, plan, request, at);
    } catch (error) {
      first = Promise.reject(error);
    }
    return first.then(
      (outcome) => (outcome instanceof Busy ? this.keepTrying(backend, plan, mayWait, request, at, signal, { outcome }) : outcome),
      (error: unknown) => this.keepTrying(backend, plan, mayWait, request, at, signal, { error }),
    );
  }

  /** An acquire with the caller's signal: one signal that follows it and close(), detached at the end. */
  protected async acquireWithSignal(
    backend: LockBackend,
    plan: AcquirePlan,
    mayWait: boolean,
    request: AcquireRequest,
    startedAt: number,
    given: AbortSignal,
  ): Promise<Lock | null> {
    const abort = linkSignals(given, this.closing);
    try {
      const at: AttemptContext = { deadline: startedAt + plan.waitMs, startedAt, signal: abort.signal, attempts: 0 };
      return await this.keepTrying(backend, plan, mayWait, request, at, abort.signal, undefined);
    } finally {
      abort.dispose();
    }
  }

  /**
   * The waiting loop: `settled` is the outcome (or error) of the attempt numbered `at.attempts`,
   * undefined to start with a fresh attempt.
   */
  protected async keepTrying(
    backend: LockBackend,
    plan: AcquirePlan,
    mayWait: boolean,
    request: AcquireRequest,
    at: AttemptContext,
    signal: AbortSignal,
    settled: Settled | undefined,
  ): Promise<Lock | null> {
    const { deadline, startedAt } = at;
    let attempts = at.attempts;
    for (;;) {
      if (settled === undefined) {
        attempts += 1;
        try {
          settled = { outcome: await this.attemptOnce(backend, plan, request, { deadline, startedAt, signal, attempts }) };
        } catch (error) {
          settled = { error };
        }
      }
      const { outcome } = settled;
      if (outcome === undefined) {
        const { error } = settled;
        settled = undefined;
        // An abort (the caller's signal, or close()) rejects with its own reason, whatever the backend threw.
        if (signal.aborted) throw signal.reason;
        // A transient disconnect inside the wait (a reconnecting client, a server back from a freeze)
        // is waited out; past the deadline, or on anything but unavailability, the error stands.
        if (!(error instanceof BackendUnavailableError) || !mayWait || Date.now() >= deadline) throw error;
        await sleep(Math.max(1, Math.min(deadline - Date.now(), backoffDelayMs(attempts))), signal);
        continue;
      }
      settled = undefined;
      if (!(outcome instanceof Busy)) return outcome;
      // Emitted in the same synchronous run that starts the wait: a listener sees a queued waiter.
      if (attempts === 1) this.emit('contended', { key: plan.userKey, owner: plan.owner, attempt: attempts });
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) {
        if (!mayWait) return null;
        throw this.timeout(backend, plan, attempts);
      }
      await waitForTurn(plan.driver, plan.fullKey, attempts, remainingMs, outcome.retryAfterMs, signal);
    }
  }

  /** An expired lease is not re-entered, even before its timer fires (a paused process). Made once, not per attempt. */
  protected readonly heldNow = (id: string): Lease | undefined => {
    const lease = this.leases.get(id);
    if (lease) this.checkDeadline(lease);
    return lease;
  };

  /**
   * One attempt, or one native wait: a lock, or Busy. Rejects on a native wait's timeout, abort,
   * failure; may throw synchronously (LockUpgradeError): callers catch both.
   */
  protected attemptOnce(backend: LockBackend, plan: AcquirePlan, request: AcquireRequest, at: AttemptContext): Promise<Lock | Busy> {
    // An acquire outside any owner flow gets an owner of its own (owner.ts): no lease to look up.
    if (plan.freshOwner === true) return this.freshAttempt(backend, plan, request, at);
    if (plan.kind === undefined) {
      // The mutex's rule of planReentry, inline (no closure or result object per attempt): its own live lease re-enters.
      const held = this.heldNow(leaseId(plan.fullKey, plan.owner));
      if (held !== undefined && !held.lost) return this.reenterOrAttempt(backend, plan, request, at, held);
      return this.freshAttempt(backend, plan, request, at);
    }
    // The kind is settled per attempt: a downgrade depends on what this owner holds right now.
    const reentry = planReentry(plan.fullKey, plan.owner, plan.kind, this.heldNow, { key: plan.userKey, backend: backend.name });
    if ('reenter' in reentry) return this.reenterOrAttempt(backend, plan, request, at, reentry.reenter);
    if (reentry.ask !== request.kind) {
      // Spelled out, not spread (as `queued` below): a spread takes V8's slow clone path.
      request = {
        key: request.key,
        owner: request.owner,
        ttlMs: request.ttlMs,
        lockDelayMs: request.lockDelayMs,
        kind: reentry.ask,
        onLost: request.onLost,
      };
    }
    return this.freshAttempt(backend, plan, request, at);
  }

  protected async reenterOrAttempt(
    backend: LockBackend,
    plan: AcquirePlan,
    request: AcquireRequest,
    at: AttemptContext,
    lease: Lease,
  ): Promise<Lock | Busy> {
    const reentered = await this.reenter(backend, plan, request, lease);
    return reentered ?? this.freshAttempt(backend, plan, request, at);
  }

  /** A plain attempt (tryAcquire), or the backend's native wait. */
  protected freshAttempt(backend: LockBackend, plan: AcquirePlan, request: AcquireRequest, at: AttemptContext): Promise<Lock | Busy> {
    const { startedAt, signal } = at;
    const sentAt = Date.now();
    const { driver } = plan;
    // A native wait (server queue, ZooKeeper watch) makes its own first attempt and reports
    // contention itself: whenever the caller may wait, it is the only call.
    if (plan.waitMs > 0 && driver.acquire !== undefined) return this.nativeAttempt(backend, plan, request, at, sentAt);
    return this.call(backend, 'acquire', plan.userKey, () => driver.tryAcquire(request), {
      undoBy: driver,
      leaseTtlMs: plan.ttlMs,
    }).then((result) => {
      if (!result.acquired) return new Busy(result.retryAfterMs);
      // Granted in the same instant as an abort: give it back rather than leave it held.
      if (signal.aborted) return this.giveBack(backend, plan, result.grant, signal);
      return this.grantLock(backend, plan, result.grant, sentAt, startedAt);
    });
  }

  protected nativeAttempt(
    backend: LockBackend,
    plan: AcquirePlan,
    request: AcquireRequest,
    at: AttemptContext,
    sentAt: number,
  ): Promise<Lock> {
    const { deadline, startedAt, signal, attempts } = at;
    let reported = attempts > 1;
    // Spelled out, not spread: `{ ...request, onContended }` was the largest self time of the contended
    // fair profile (a spread plus a property takes V8's slow clone path here).
    const queued: AcquireRequest = {
      key: request.key,
      owner: request.owner,
      ttlMs: request.ttlMs,
      lockDelayMs: request.lockDelayMs,
      kind: request.kind,
      onLost: request.onLost,
      onContended: () => {
        if (reported) return;
        reported = true;
        this.emit('contended', { key: plan.userKey, owner: plan.owner, attempt: attempts });
      },
    };
    // A native wait may not honour its deadline on a frozen server: bound it by the wait plus one call.
    const { driver } = plan;
    return this.call(backend, 'acquire', plan.userKey, () => driver.acquire!(queued, deadline, signal), {
      timeoutMs: Math.max(0, deadline - Date.now()) + callTimeoutOf(backend) + safetyNetSlackMs,
      undoBy: driver,
      leaseTtlMs: plan.ttlMs,
    }).then((grant) => {
      // Granted in the same instant as an abort: give it back rather than leave it held.
      if (grant && signal.aborted) return this.giveBack(backend, plan, grant, signal);
      signal.throwIfAborted();
      if (grant) return this.grantLock(backend, plan, grant, sentAt, startedAt);
      throw this.timeout(backend, plan, attempts);
    });
  }

  /** A grant that landed as the acquire was aborted: released, and the abort's reason thrown. */
  protected async giveBack(backend: LockBackend, plan: AcquirePlan, grant: Grant, signal: AbortSignal): Promise<never> {
    await this.call(backend, 'release', plan.userKey, () => plan.driver.release(grant), { closable: false }).catch(() => false);
    throw signal.reason;
  }

  /** Same owner, same key, lease alive: count one more hold instead of asking for a second grant. */
  protected async reenter(backend: LockBackend, plan: AcquirePlan, request: AcquireRequest, lease: Lease): Promise<Lock | undefined> {
    if (backend.capabilities.reentrant === 'server') {
      // The server keeps the count (hash-reentrant): it must see every hold and every release.
      const result = await this.call(backend, 'acquire', plan.userKey, () => plan.driver.tryAcquire(request), {
        undoBy: plan.driver,
        leaseTtlMs: plan.ttlMs,
      });
      if (!result.acquired) {
        this.markLost(lease, 'the server no longer knows this owner as the holder');
        return undefined;
      }
    }
    lease.holds += 1;
    this.emit('acquired', { key: plan.userKey, owner: plan.owner, fence: lease.grant.fence, waitedMs: 0, reentered: true });
    instruments.acquisitions.add(1, { backend: backend.name, reentered: true });
    return new LockHandle(lease, this);
  }

  /** Adopts a grant as a held lock, kept by `keeper`: the driver that issued it. */
  protected grantLock(
    backend: LockBackend,
    plan: AcquirePlan,
    grant: Grant,
    sentAt: number,
    startedAt: number,
    keeper: HoldKeeper = plan.driver,
  ): Lock {
    const id = kindLeaseId(plan.fullKey, plan.owner, plan.kind, grant.token);
    const lease = new Lease(
      plan.userKey,
      plan.fullKey,
      plan.owner,
      grant,
      keeper,
      plan.ttlMs,
      plan.autoRenew,
      backend.capabilities.lease === 'session',
      sentAt,
      this.expireLease,
      id,
    );
    if (plan.expiringThresholdMs !== undefined) lease.expiringThresholdMs = plan.expiringThresholdMs;
    this.leases.set(id, lease);
    this.renewer?.add(lease);
    const waitedMs = Date.now() - startedAt;
    if (this.listens('acquired'))
      this.emit('acquired', { key: plan.userKey, owner: plan.owner, fence: grant.fence, waitedMs, reentered: false });
    if (metricsOn()) {
      instruments.acquisitions.add(1, { backend: backend.name, reentered: false });
      instruments.waitTime.record(waitedMs, { backend: backend.name });
    }
    return new LockHandle(lease, this);
  }

  timeout(backend: LockBackend, plan: AcquirePlan, attempts: number): LockTimeoutError {
    instruments.timeouts.add(1, { backend: backend.name });
    return new LockTimeoutError({ key: plan.userKey, backend: backend.name, waitMs: plan.waitMs, attempts });
  }
}
