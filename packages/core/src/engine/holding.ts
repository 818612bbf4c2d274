import type { LockBackend } from '../contract/backend.js';
import type { HoldKeeper } from '../contract/drivers.js';
import { driversOf } from '../contract/drivers-of.js';
import type { Grant } from '../contract/requests.js';
import { LockLostError, LockReleasedError } from '../errors.js';
import { refusal } from '../refusal.js';
import { ForcedReleaseError } from '../forced-release-error.js';
import { instruments, traced, tracingOn } from '../telemetry.js';
import { EngineCore } from './engine-core.js';
import { multiLabel } from './key-label.js';
import { leaseId, type Lease } from './lease.js';
import { lostReason } from './link-signals.js';
import type { HandleOwner, LockHandle } from './lock-handle.js';

/**
 * Holding a lock: renew, validate, release, and loss. Every call goes to the lease's keeper, the
 * driver that issued its grant (contract v2): no driver is asked about another's holds.
 */
export abstract class Holding extends EngineCore implements HandleOwner {
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

  /**
   * `lock.validate()` and `multiLock.validate()`: whether the server still holds every handle's
   * exact grant, one question per keeper (one round trip per connection where it batches). A
   * keeper that cannot answer is refused before any I/O; a handle released, lost or past its local
   * deadline is answered false without I/O. A grant the server no longer holds is declared lost:
   * its signal aborts and 'lost' is emitted, as after a refused renewal.
   */
  async validateHandles(handles: readonly LockHandle[]): Promise<boolean> {
    const backend = await this.backendLoading;
    const label = multiLabel(handles.map((handle) => handle.key));
    const byKeeper = new Map<HoldKeeper, Lease[]>();
    for (const lease of new Set(handles.map((handle) => handle.lease))) {
      const group = byKeeper.get(lease.keeper);
      if (group === undefined) byKeeper.set(lease.keeper, [lease]);
      else group.push(lease);
    }
    for (const keeper of byKeeper.keys()) {
      if (keeper.validate === undefined) {
        throw refusal(
          'validate',
          'this backend cannot ask the server whether a grant still holds (its driver implements no validate); check lock.held, and fence the resource',
          backend,
          label,
        );
      }
    }
    if (!handles.every((handle) => handle.held)) return false;
    const groups = [...byKeeper];
    const answers = await Promise.all(
      groups.map(([keeper, group]) =>
        this.call(backend, 'validate', label, () =>
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
        if (answers[index]![at] === true) continue;
        valid = false;
        // Released while the question was out: that release, not a loss, is why the server says no.
        if (!lease.lost && lease.holds > 0)
          this.markLost(lease, 'validate: the server no longer holds this grant (released, expired or taken over)');
      }
    }
    return valid && handles.every((handle) => handle.held);
  }

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
  protected sendRelease(backend: LockBackend, lease: Lease): Promise<void> {
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

  protected emitReleased(lease: Lease): void {
    if (this.listens('released')) this.emit('released', { key: lease.userKey, owner: lease.owner });
  }

  /** A mutex's AcquireRequest.onLost: one function per client, not a closure per acquire. */
  readonly onMutexLost = (grant: Grant, cause: Error): void => this.onBackendLost(leaseId(grant.key, grant.owner), grant, cause);

  protected onBackendLost(id: string, grant: Grant, cause: Error): void {
    const lease = this.leases.get(id);
    if (lease && lease.grant.token === grant.token)
      this.markLost(lease, cause instanceof LockLostError ? cause.reason : cause.message, cause);
  }

  /** `held`, `assertHeld()` and every signal read the clock, not only timers: a paused process learns of its loss at once. */
  protected checkDeadline(lease: Lease): void {
    lease.checkClock();
  }

  /** Lease.checkClock's way out: one function per client, not a closure per lease. */
  protected readonly expireLease = (lease: Lease): void =>
    this.markLost(lease, 'the lease ran out before a renewal was confirmed (a paused process or a blocked event loop)');

  protected markLost(lease: Lease, reason: string, cause?: unknown): void {
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
  protected async markRefused(backend: LockBackend, lease: Lease, reason: string): Promise<void> {
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
}

/** One keeper's answers, in the order of `grants`. */
function ask(keeper: HoldKeeper, grants: readonly Grant[]): Promise<readonly boolean[]> {
  if (grants.length === 1) return keeper.validate!(grants[0]!).then((answer) => [answer]);
  if (keeper.validateMany) return keeper.validateMany(grants);
  return Promise.all(grants.map((grant) => keeper.validate!(grant)));
}
