import { EventEmitter, setMaxListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import { inspectSafely } from './adapter/safe-inspect.js';
import { Busy, type AcquirePlan, type AttemptContext, type Settled } from './acquire-plan.js';
import type { AcquireRequest, Grant, LockBackend, LockKind } from './backend.js';
import { backoffDelayMs } from './backoff.js';
import { callBackend, callTimeoutOf, safetyNetSlackMs, type CallPolicy, type CallSite } from './backend-call.js';
import type { HoldKeeper } from './contract/drivers.js';
import { driversOf, type Drivers } from './contract/legacy.js';
import { resolveConfig } from './config.js';
import { BackendUnavailableError, ClientClosedError, LockLostError, LockReleasedError, LockTimeoutError } from './errors.js';
import {
  checkKindSupported,
  kindLeaseId,
  kindName,
  planReentry,
  type KindAcquirer,
  type ReadWriteLock,
  type Semaphore,
  type SemaphoreOptions,
} from './kinds.js';
import { Lease, leaseId } from './lease.js';
import { checkLockDelaySupported } from './lock-delay.js';
import { linkSignals, lostReason } from './link-signals.js';
import { LockHandle, type HandleOwner } from './lock-handle.js';
import { DeadboltElection } from './election.js';
import { ForcedReleaseError } from './forced-release-error.js';
import { forceReleaseKey, inspectKey, listInspections, type OperationsSite } from './operations.js';
import type { ListOptions, LockInspection } from './operations-types.js';
import { acquireAll } from './multi-lock.js';
import { currentFlow, newFlow, runInFlow } from './owner.js';
import type { PrimitiveHost } from './primitive-host.js';
import { createReadWriteLock } from './read-write.js';
import { createSemaphore } from './semaphore.js';
import { Renewer } from './renewer.js';
import { lastRun, runOnce } from './run-once/run-once.js';
import type { LastRun, RunContext, RunOnceOptions, RunOnceResult } from './run-once/types.js';
import { sleep } from './sleep.js';
import { instruments, metricsOn, traced, tracingOn } from './telemetry.js';
import type { AcquireOptions, Lock, LockClient, LockClientConfig, LockDefaults, LockEvents } from './types.js';
import type { ElectOptions, Election, MultiLock } from './types-multi.js';
import { validateAcquireOptions, validateAgainstCapabilities } from './validation.js';
import { validateHolds, type ValidateSite } from './validate-hold.js';
import { waitForTurn } from './wait-for-turn.js';

/**
 * The one implementation of the user-facing API. It owns every policy: validation, waiting with
 * notifications or backoff, reentrancy bookkeeping, renewal, loss detection, events and telemetry.
 * Backends only make single atomic attempts (see backend.ts).
 */
export class DeadboltClient implements LockClient, HandleOwner, KindAcquirer {
  /** Distinguishes owners of different client instances, like Redisson's connection-manager id. */
  readonly id = randomUUID();
  private readonly emitter = new EventEmitter();
  private readonly defaults: LockDefaults;
  private readonly configuredPrefix: string | undefined;
  private readonly backendLoading: Promise<LockBackend>;
  private renewer: Renewer | undefined;
  /** The backend once loaded: the hot path reads it without awaiting backendLoading again. */
  private loaded: LockBackend | undefined;
  /** The loaded backend's drivers (contract/legacy.ts), read once. */
  private drivers: Drivers | undefined;
  private readonly leases = new Map<string, Lease>();
  private readonly closing = new AbortController();
  private closed: Promise<void> | undefined;
  private backendLabel: string;

  constructor(config?: LockClientConfig) {
    const resolved = resolveConfig(config);
    this.defaults = resolved.defaults;
    this.configuredPrefix = resolved.prefix;
    this.backendLabel = resolved.scheme;
    this.emitter.setMaxListeners(0);
    // Every pending acquire listens for close(); thousands may wait at once.
    setMaxListeners(0, this.closing.signal);
    if (resolved.backend instanceof Promise) {
      this.backendLoading = resolved.backend.then((backend) => this.adopt(backend));
      this.backendLoading.catch(() => undefined);
    } else {
      this.backendLoading = Promise.resolve(this.adopt(resolved.backend));
    }
  }

  get backend(): string {
    return this.backendLabel;
  }

  /** True to the clock as `held` is: a lease past its deadline (a stall) is declared lost first. O(held locks). */
  get heldCount(): number {
    for (const lease of this.leases.values()) lease.checkClock();
    return this.leases.size;
  }

  async capabilities(): Promise<LockBackend['capabilities']> {
    return (await this.backendLoading).capabilities;
  }

  acquire(key: string, options?: AcquireOptions): Promise<Lock> {
    // A waiting acquire never resolves null (it throws LockTimeoutError): no promise layer to check it.
    return this.acquireOrNull(key, options, true) as Promise<Lock>;
  }

  tryAcquire(key: string, options?: Omit<AcquireOptions, 'waitMs'>): Promise<Lock | null> {
    return this.acquireOrNull(key, options, false);
  }

  withLock<T>(key: string, fn: (lock: Lock) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return this.withKind(key, undefined, fn, options);
  }

  readWriteLock(key: string): ReadWriteLock {
    return createReadWriteLock(this, key, this.backendLabel);
  }

  semaphore(key: string, options: SemaphoreOptions): Semaphore {
    return createSemaphore(this, key, options, this.backendLabel);
  }

  /** The mutex's acquisition with a kind of hold attached (read-write locks, semaphores). */
  acquireKind(key: string, kind: LockKind | undefined, options: AcquireOptions | undefined, mayWait: boolean): Promise<Lock | null> {
    return this.acquireOrNull(key, options, mayWait, kind);
  }

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

  acquireAll(keys: readonly string[], options?: AcquireOptions): Promise<MultiLock> {
    return acquireAll(this.host(), keys, options);
  }

  elect(name: string, options: ElectOptions): Election {
    return new DeadboltElection(this.host(), name, options);
  }

  runOnce<T>(name: string, fn: (context: RunContext) => Promise<T> | T, options: RunOnceOptions): Promise<RunOnceResult<T>> {
    return runOnce(this.host(), name, fn, options);
  }

  lastRun(name: string): Promise<LastRun | null> {
    return lastRun(this.host(), name);
  }

  inspect(key: string): Promise<LockInspection> {
    return inspectKey(this.operationsSite, key);
  }

  forceRelease(key: string): Promise<boolean> {
    return forceReleaseKey(this.operationsSite, key);
  }

  list(options?: ListOptions): AsyncIterable<LockInspection> {
    return listInspections(this.operationsSite, options);
  }

  private readonly operationsSite: OperationsSite = {
    clientId: this.id,
    label: () => this.backendLabel,
    backend: () => this.backendLoading,
    prefixOf: (backend) => this.configuredPrefix ?? backend.defaultPrefix ?? '',
    assertOpen: (key) => this.assertOpen(key),
    call: (backend, action, key, fn) => this.call(backend, action, key, fn),
    forced: (event) => this.emit('forced', event),
  };

  on<E extends keyof LockEvents>(event: E, listener: (...args: LockEvents[E]) => void): this {
    this.emitter.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  off<E extends keyof LockEvents>(event: E, listener: (...args: LockEvents[E]) => void): this {
    this.emitter.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  once<E extends keyof LockEvents>(event: E, listener: (...args: LockEvents[E]) => void): this {
    this.emitter.once(event, listener as (...args: unknown[]) => void);
    return this;
  }

  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  // ---- acquisition ----------------------------------------------------------------------------

  /**
   * The hot path, without promise layers of its own: every `async` function and every `await` of an
   * inner async result is another promise and microtask turn per acquire (the uncontended profile).
   * Synchronous failures (validation, a closed client) still reach the caller as rejections.
   */
  private acquireOrNull(key: string, options: AcquireOptions | undefined, mayWait: boolean, kind?: LockKind): Promise<Lock | null> {
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
  private async acquireOnceLoaded(
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

  private plan(
    backend: LockBackend,
    key: string,
    options: AcquireOptions | undefined,
    mayWait: boolean,
    kind: LockKind | undefined,
  ): AcquirePlan {
    const drivers = backend === this.loaded ? this.drivers! : driversOf(backend);
    if (kind) checkKindSupported(kind, backend.capabilities, backend.name, key);
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
    checkLockDelaySupported(plan.lockDelayMs, backend.capabilities, backend.name, key, kind);
    return plan;
  }

  /**
   * The first attempt runs without the waiting loop (an uncontended acquire ends there); a busy
   * lock or a failed attempt goes on in `keepTrying`. Without a caller's signal, close()'s signal is
   * the acquire's whole abort signal: nothing to link, nothing to dispose.
   */
  private acquireWithPlan(backend: LockBackend, plan: AcquirePlan, mayWait: boolean): Promise<Lock | null> {
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
    const signal = this.closing.signal;
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
  private async acquireWithSignal(
    backend: LockBackend,
    plan: AcquirePlan,
    mayWait: boolean,
    request: AcquireRequest,
    startedAt: number,
    given: AbortSignal,
  ): Promise<Lock | null> {
    const abort = linkSignals(given, this.closing.signal);
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
  private async keepTrying(
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
  private readonly heldNow = (id: string): Lease | undefined => {
    const lease = this.leases.get(id);
    if (lease) this.checkDeadline(lease);
    return lease;
  };

  /**
   * One attempt, or one native wait: a lock, or Busy. Rejects on a native wait's timeout, abort,
   * failure; may throw synchronously (LockUpgradeError): callers catch both.
   */
  private attemptOnce(backend: LockBackend, plan: AcquirePlan, request: AcquireRequest, at: AttemptContext): Promise<Lock | Busy> {
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

  private async reenterOrAttempt(
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
  private freshAttempt(backend: LockBackend, plan: AcquirePlan, request: AcquireRequest, at: AttemptContext): Promise<Lock | Busy> {
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

  private nativeAttempt(
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
  private async giveBack(backend: LockBackend, plan: AcquirePlan, grant: Grant, signal: AbortSignal): Promise<never> {
    await this.call(backend, 'release', plan.userKey, () => plan.driver.release(grant), { closable: false }).catch(() => false);
    throw signal.reason;
  }

  /** Same owner, same key, lease alive: count one more hold instead of asking for a second grant. */
  private async reenter(backend: LockBackend, plan: AcquirePlan, request: AcquireRequest, lease: Lease): Promise<Lock | undefined> {
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
  private grantLock(
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

  private timeout(backend: LockBackend, plan: AcquirePlan, attempts: number): LockTimeoutError {
    instruments.timeouts.add(1, { backend: backend.name });
    return new LockTimeoutError({ key: plan.userKey, backend: backend.name, waitMs: plan.waitMs, attempts });
  }

  // ---- holding: renew, release, loss ------------------------------------------------------------

  async renewHandle(handle: LockHandle): Promise<void> {
    const { lease } = handle;
    const backend = await this.backendLoading;
    const context = { key: lease.userKey, backend: backend.name };
    if (handle.released) throw new LockReleasedError('renew', context);
    if (lease.lost) throw lostReason(lease.controller.signal) ?? new LockLostError('the lock was already lost', context);
    if (Date.now() >= lease.expiresAt) {
      // The lease may already have run out on the server (a long pause, a blocked event loop):
      // extending it now could extend someone else's hold, so it is lost, not renewed.
      this.markLost(lease, 'the lease had expired before renew() was called');
      throw lostReason(lease.controller.signal) ?? new LockLostError('lease expired', context);
    }
    const sentAt = Date.now();
    const renewed = await this.call(backend, 'renew', lease.userKey, () => lease.keeper.renew(lease.grant, lease.ttlMs));
    if (!renewed) {
      await this.markRefused(backend, lease, 'the renewal was refused: the lock expired or another owner holds it');
      throw lostReason(lease.controller.signal) ?? new LockLostError('renewal refused', context);
    }
    lease.confirmRenewal(sentAt);
    this.emit('renewed', { key: lease.userKey, owner: lease.owner });
    instruments.renewals.add(1, { backend: backend.name });
  }

  validateHandles(handles: readonly LockHandle[]): Promise<boolean> {
    return validateHolds(handles, this.validateSite);
  }

  private readonly validateSite: ValidateSite = {
    backend: () => this.backendLoading,
    call: (backend, key, fn) => this.call(backend, 'validate', key, fn),
    refused: (lease) => this.markLost(lease, 'validate: the server no longer holds this grant (released, expired or taken over)'),
  };

  releaseHandle(handle: LockHandle): Promise<void> {
    const backend = this.loaded;
    if (backend === undefined) return this.backendLoading.then(() => this.releaseHandle(handle));
    const { lease } = handle;
    // A lease past its deadline (a stall) is lost first: its release is then only tidying up.
    lease.checkClock();
    handle.released = true;
    lease.holds -= 1;
    const serverCounts = backend.capabilities.reentrant === 'server';
    // close() already released every lease on the backend (and closed it): nothing left to send.
    if ((lease.holds > 0 && !serverCounts) || (this.closed && lease.lost)) {
      this.emit('released', { key: lease.userKey, owner: lease.owner });
      return Promise.resolve();
    }
    if (lease.holds === 0) this.forget(lease);
    // A lost lease's hold is gone on the server. Where the server counts holds per owner (not per
    // grant), releasing it would take back a hold the same owner has taken since: skip it then.
    const newer = this.leases.get(lease.id);
    if (lease.lost && serverCounts && newer !== undefined && newer !== lease) {
      this.emit('released', { key: lease.userKey, owner: lease.owner });
      return Promise.resolve();
    }
    if (!tracingOn()) return this.sendRelease(backend, lease);
    return traced(
      'release',
      () => ({ 'deadbolt.key': lease.userKey, 'deadbolt.backend': backend.name }),
      () => this.sendRelease(backend, lease),
    );
  }

  /** The release call, then 'released'. Without async layers: it is half of every uncontended cycle. */
  private sendRelease(backend: LockBackend, lease: Lease): Promise<void> {
    // Compare-and-delete is safe even after a local loss: it removes the key only if it is still ours.
    // After a loss that release is only tidying up, so its failure is not the caller's problem.
    const tidyingUp = lease.lost;
    return this.call(backend, 'release', lease.userKey, () => lease.keeper.release(lease.grant), { closable: false }).then(
      (deleted) => {
        if (!deleted && !lease.lost) this.markLost(lease, 'at release the lock was no longer ours (expired or taken over)');
        this.emitReleased(lease);
      },
      tidyingUp ? () => this.emitReleased(lease) : undefined,
    );
  }

  private emitReleased(lease: Lease): void {
    if (this.listens('released')) this.emit('released', { key: lease.userKey, owner: lease.owner });
  }

  /** A mutex's AcquireRequest.onLost: one function per client, not a closure per acquire. */
  private readonly onMutexLost = (grant: Grant, cause: Error): void => this.onBackendLost(leaseId(grant.key, grant.owner), grant, cause);

  private onBackendLost(id: string, grant: Grant, cause: Error): void {
    const lease = this.leases.get(id);
    if (lease && lease.grant.token === grant.token)
      this.markLost(lease, cause instanceof LockLostError ? cause.reason : cause.message, cause);
  }

  /** `held`, `assertHeld()` and every signal read the clock, not only timers: a paused process learns of its loss at once. */
  private checkDeadline(lease: Lease): void {
    lease.checkClock();
  }

  /** Lease.checkClock's way out: one function per client, not a closure per lease. */
  private readonly expireLease = (lease: Lease): void =>
    this.markLost(lease, 'the lease ran out before a renewal was confirmed (a paused process or a blocked event loop)');

  private markLost(lease: Lease, reason: string, cause?: unknown): void {
    if (lease.lost) return;
    lease.lost = true;
    this.forget(lease);
    const error = new LockLostError(reason, { key: lease.userKey, backend: this.backendLabel, cause });
    lease.controller.abort(error);
    instruments.lost.add(1, { backend: this.backendLabel });
    this.emit('lost', { key: lease.userKey, owner: lease.owner, error });
  }

  /**
   * A refused renewal: the hold is gone on the server. Where the backend keeps a forceRelease
   * marker, one read says whether an operator took it back; the loss then says who.
   */
  private async markRefused(backend: LockBackend, lease: Lease, reason: string): Promise<void> {
    const operations = driversOf(backend).operations;
    if (operations?.forcedBy) {
      const by = await this.call(backend, 'renew', lease.userKey, () => operations.forcedBy!(lease.grant)).catch(() => undefined);
      if (by !== undefined) {
        const cause = new ForcedReleaseError(by, { key: lease.userKey, backend: backend.name });
        this.markLost(lease, cause.message, cause);
        return;
      }
    }
    this.markLost(lease, reason);
  }

  private forget(lease: Lease): void {
    if (this.leases.get(lease.id) === lease) this.leases.delete(lease.id);
    this.renewer?.remove(lease);
  }

  // ---- plumbing ---------------------------------------------------------------------------------

  private primitiveHost: PrimitiveHost | undefined;

  /** Multi-lock and election (multi-lock.ts, election.ts) run on this client's own policies. */
  private host(): PrimitiveHost {
    this.primitiveHost ??= {
      clientId: this.id,
      closing: this.closing.signal,
      label: () => this.backendLabel,
      backend: () => this.backendLoading,
      assertOpen: (key) => this.assertOpen(key),
      plan: (backend, key, options, mayWait) => this.plan(backend, key, options, mayWait, undefined),
      acquire: (key, options) => this.acquire(key, options),
      holds: (fullKey, owner) => this.leases.get(kindLeaseId(fullKey, owner, undefined, ''))?.lost === false,
      adopt: (backend, plan, grant, sentAt, startedAt, keeper) => this.grantLock(backend, plan, grant, sentAt, startedAt, keeper),
      call: (backend, action, key, fn, how) =>
        this.call(
          backend,
          action,
          key,
          fn,
          how?.release
            ? { closable: false }
            : {
                undoBy: how?.undoBy ?? driversOf(backend).mutex,
                ...(how?.waitUntil === undefined
                  ? {}
                  : { timeoutMs: Math.max(0, how.waitUntil - Date.now()) + callTimeoutOf(backend) + safetyNetSlackMs }),
              },
        ),
      onLost: (grant, cause) => this.onBackendLost(kindLeaseId(grant.key, grant.owner, undefined, grant.token), grant, cause),
      emit: (event, ...args) => this.emit(event, ...args),
      timeout: (backend, plan, attempts) => this.timeout(backend, plan, attempts),
    };
    return this.primitiveHost;
  }

  private adopt(backend: LockBackend): LockBackend {
    this.backendLabel = backend.name;
    this.drivers = driversOf(backend);
    this.loaded = backend;
    this.renewer = new Renewer(backend, {
      renewed: (lease) => {
        this.emit('renewed', { key: lease.userKey, owner: lease.owner });
        instruments.renewals.add(1, { backend: backend.name });
      },
      lost: (lease, reason, cause) => this.markLost(lease, reason, cause),
      refused: (lease, reason) => void this.markRefused(backend, lease, reason),
      expiring: (lease, remainingMs, error) => this.emit('expiring', { key: lease.userKey, owner: lease.owner, remainingMs, error }),
      failed: (lease, error) =>
        this.reportError(lease.userKey, new BackendUnavailableError('renew', { key: lease.userKey, backend: backend.name, cause: error })),
    });
    return backend;
  }

  /** One backend call through the call guard (backend-call.ts), cut short by close() unless told otherwise. */
  private call<T>(backend: LockBackend, action: string, key: string, fn: () => Promise<T>, policy: CallPolicy = {}): Promise<T> {
    return callBackend(backend, action, key, fn, policy, this.callSite);
  }

  /** `call`'s close() signal: made once, not per call. */
  private readonly callSite: CallSite = { closing: this.closing.signal };

  private assertOpen(key: string): void {
    if (this.closed) throw new ClientClosedError({ key, backend: this.backendLabel });
  }

  /** Whether anyone listens: the hot path skips building an event nobody receives. */
  private listens(event: keyof LockEvents): boolean {
    return this.emitter.listenerCount(event) > 0;
  }

  private emit<E extends keyof LockEvents>(event: E, ...args: LockEvents[E]): void {
    try {
      this.emitter.emit(event, ...args);
    } catch (error) {
      // A throwing listener must not break lock bookkeeping.
      if (event !== 'error') this.reportError(undefined, error);
    }
  }

  private reportError(key: string | undefined, error: unknown): void {
    // Node throws on an 'error' event nobody listens to; a background renewal hiccup must not crash the app.
    if (this.emitter.listenerCount('error') > 0)
      this.emit('error', { key, error: error instanceof Error ? error : new Error(String(error)) });
  }

  private async shutdown(): Promise<void> {
    this.closing.abort(new ClientClosedError({ backend: this.backendLabel }));
    let backend: LockBackend;
    try {
      backend = await this.backendLoading;
    } catch {
      return; // the backend never loaded: nothing to release or close
    }
    const leases = [...this.leases.values()];
    this.renewer?.stop();
    await Promise.allSettled(
      leases.map(async (lease) => {
        this.forget(lease);
        // The holders must learn that the lock is going: their signal aborts, `held` turns false,
        // renew() rejects, and a later release()/dispose is the no-op tidy-up of an ended lease
        // instead of a call on the closed backend.
        lease.lost = true;
        lease.controller.abort(new ClientClosedError({ key: lease.userKey, backend: backend.name }));
        await this.call(backend, 'release', lease.userKey, () => lease.keeper.release(lease.grant), { closable: false });
      }),
    );
    await backend.close();
  }
}

// console.log(client) must not print the backend's connections (and with them credentials).
inspectSafely(DeadboltClient, (client) => ({ backend: client.backend, heldCount: client.heldCount }));
