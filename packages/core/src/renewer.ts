import type { LockBackend } from './backend.js';
import type { HoldKeeper } from './contract/drivers.js';
import { BackendUnavailableError } from './errors.js';
import type { Lease } from './lease.js';

export interface RenewerHooks {
  renewed(lease: Lease): void;
  lost(lease: Lease, reason: string, cause?: unknown): void;
  /** A renewal was refused (the hold is gone on the server); absent: lost. */
  refused?(lease: Lease, reason: string): void;
  failed(lease: Lease, error: unknown): void;
  /** The lease entered jeopardy (Lease.jeopardyAt): `remainingMs` of it left, `error` why the renewal failed. */
  expiring(lease: Lease, remainingMs: number, error: Error): void;
}

/**
 * One timer per client renews every auto-renewed lease and declares expired ones lost (DESIGN:
 * "ten thousand held locks cost a handful of timers"). The timer aims at the earliest moment any
 * lease needs attention; leases whose renewal falls due within the next sixth of their ttl are
 * renewed in the same batch, so locks taken close together share one round trip per tick.
 */
export class Renewer {
  private readonly leases = new Set<Lease>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private stopped = false;

  constructor(
    private readonly backend: LockBackend,
    private readonly hooks: RenewerHooks,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.leases.size;
  }

  add(lease: Lease): void {
    this.leases.add(lease);
    this.aimAt(Math.min(lease.renewDueAt, lease.expiresAt));
  }

  /**
   * The timer is left armed (unref'd) when the last lease goes: a client that takes and releases one
   * lock after another would otherwise arm and clear a Node timer per lock (both showed in the
   * uncontended profile), where now the next lease finds it armed early enough. The first tick that
   * finds nothing held drops it, so an idle client keeps no timer past one lease period; stop() too.
   */
  remove(lease: Lease): void {
    this.leases.delete(lease);
  }

  /** Brings a renewal forward, e.g. after a failed attempt. */
  reschedule(lease: Lease): void {
    if (this.leases.has(lease)) this.aimAt(Math.min(lease.renewDueAt, lease.expiresAt));
  }

  stop(): void {
    this.stopped = true;
    this.leases.clear();
    this.clearTimer();
  }

  private aimAt(at: number): void {
    if (this.stopped || !Number.isFinite(at) || at >= this.timerAt) return;
    this.clearTimer();
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(0, at - this.now()));
    // Renewal alone should not keep a process alive: whatever the lock protects keeps it busy.
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = this.now();
    const due: Lease[] = [];
    for (const lease of this.leases) {
      if (now >= lease.expiresAt) {
        this.leases.delete(lease);
        this.hooks.lost(lease, 'the lease expired before a renewal was confirmed');
      } else {
        if (now >= lease.jeopardyAt) this.jeopardy(lease, now);
        if (!lease.renewing && lease.renewDueAt - now <= lease.ttlMs / 6) due.push(lease);
      }
    }
    if (due.length > 0) void this.renewBatch(due, now);
    this.aimAtNext();
  }

  private aimAtNext(): void {
    let next = Number.POSITIVE_INFINITY;
    for (const lease of this.leases) {
      next = Math.min(next, lease.expiresAt, lease.jeopardyAt, lease.renewing ? Number.POSITIVE_INFINITY : lease.renewDueAt);
    }
    this.aimAt(next);
  }

  /**
   * A renewal failed or is still unanswered and less than the threshold is left: 'expiring', once
   * per episode (a confirmed renewal ends it), while the lease still runs, so there is time to stop.
   */
  private jeopardy(lease: Lease, now: number): void {
    const remainingMs = lease.expiresAt - now;
    if (remainingMs <= 0) return;
    const error =
      lease.renewError ??
      new BackendUnavailableError('renew', {
        key: lease.userKey,
        backend: this.backend.name,
        cause: new Error(`the renewal has not been answered and ${remainingMs} ms of the lease are left`),
      });
    lease.enterJeopardy(error);
    this.hooks.expiring(lease, remainingMs, error);
  }

  /** One batch per keeper (the driver that issued the holds): no driver is asked about another's grants. */
  private renewBatch(due: Lease[], sentAt: number): void {
    for (const lease of due) lease.renewing = true;
    const keeper = due[0]!.keeper;
    if (due.every((lease) => lease.keeper === keeper)) {
      void this.renewGroup(keeper, due, sentAt);
      return;
    }
    const groups = new Map<HoldKeeper, Lease[]>();
    for (const lease of due) {
      const group = groups.get(lease.keeper);
      if (group === undefined) groups.set(lease.keeper, [lease]);
      else group.push(lease);
    }
    for (const [groupKeeper, group] of groups) void this.renewGroup(groupKeeper, group, sentAt);
  }

  private async renewGroup(keeper: HoldKeeper, due: Lease[], sentAt: number): Promise<void> {
    let results: readonly (boolean | Error)[];
    try {
      if (keeper.renewMany) {
        results = await keeper.renewMany(
          due.map((lease) => lease.grant),
          due.map((lease) => lease.ttlMs),
        );
      } else {
        results = await Promise.all(due.map((lease) => keeper.renew(lease.grant, lease.ttlMs).catch((error: unknown) => toError(error))));
      }
    } catch (error) {
      results = due.map(() => toError(error));
    }
    for (const [index, lease] of due.entries()) {
      lease.renewing = false;
      if (!this.leases.has(lease)) continue; // released or lost while the renewal was in flight
      const result = results[index];
      if (result === true) {
        lease.confirmRenewal(sentAt);
        this.hooks.renewed(lease);
      } else if (result === false) {
        this.leases.delete(lease);
        const reason = 'a renewal was refused: the lock expired or another owner holds it';
        if (this.hooks.refused) this.hooks.refused(lease, reason);
        else this.hooks.lost(lease, reason);
      } else {
        // Unknown outcome: keep trying, sooner, until the local lease deadline declares it lost.
        lease.renewError = new BackendUnavailableError('renew', { key: lease.userKey, backend: this.backend.name, cause: result });
        this.hooks.failed(lease, result);
        lease.renewDueAt = this.now() + Math.max(10, Math.floor(lease.ttlMs / 10));
        const now = this.now();
        if (now >= lease.jeopardyAt && now < lease.expiresAt) this.jeopardy(lease, now);
      }
    }
    this.aimAtNext();
  }
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
