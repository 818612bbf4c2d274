import type { AcquireRequest, Grant } from '@deadbolt/core/adapter';
import type { ReleaseListener } from '../listener.js';
import { randomToken } from '../token.js';
import type { AttemptRow } from './lease.js';

/** What the queue needs of the lease mode: its statements and the listener. */
export interface LeaseQueuePort {
  /** How long a silent waiter keeps its place (server clock); it heartbeats every third of it. */
  readonly waiterLeaseMs: number;
  /** This client's grant channel. */
  readonly channel: string;
  readonly listener: ReleaseListener;
  attempt(request: AcquireRequest, token: string, join: boolean): Promise<AttemptRow>;
  leave(request: AcquireRequest, token: string): Promise<void>;
  heartbeat(
    tokens: readonly string[],
    keys: readonly string[],
  ): Promise<readonly { token: string; queued: boolean; remaining_ms: number | null }[]>;
  /** Extends grants that arrived with a short claim to their ttl (renewMany). */
  extend(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]>;
  extendOne(grant: Grant, ttlMs: number): Promise<boolean>;
}

/** A grant plus what the queue needs to extend it: fields core treats as opaque. */
interface QueuedGrant extends Grant {
  validUntil?: number;
  readonly ttlMs: number;
  /** Only on grants that arrived by message (they are extended later, and may be reported lost). */
  request?: AcquireRequest;
}

/** One queued acquire. */
interface Waiter {
  readonly request: AcquireRequest;
  readonly token: string;
  /** Send time of the latest statement that found us still queued: no grant to us started before it. */
  waitingSeenAt: number;
  /** Set once the acquire has an outcome or is giving up: later messages and replies are ignored. */
  done: boolean;
  grant(grant: QueuedGrant): void;
  /** A re-check or heartbeat answered: the holder's remaining lease, to re-check after it. */
  stillWaiting(remainingMs: number | null, sentAt: number): void;
  /** Re-check now (a heartbeat found the lock free or our entry gone, or messages may be lost). */
  recheck(): void;
  /** Gives up as on a timeout (the backend closes). */
  cancel(): void;
  /** Stops without a word to the server (a simulated crash): no timer left, the entry stays queued. */
  halt(): void;
}

/** A grant of `request`, marked as a read/write/permit hold when it is one (its rows are in the kinds tables). */
export function grantOf(request: AcquireRequest, token: string, fence: number, validUntil?: number): Grant {
  const lockDelayMs = request.lockDelayMs ?? 0;
  const grant: Grant = { key: request.key, owner: request.owner, token, fence, ...(lockDelayMs > 0 ? { lockDelayMs } : {}) };
  if (request.kind !== undefined) (grant as { kinded?: true }).kinded = true;
  if (validUntil !== undefined) grant.validUntil = validUntil;
  return grant;
}

/** The local end of a lease of `ttlMs` the server started after `sentAt` (core's drift allowance). */
export function validFrom(sentAt: number, ttlMs: number): number {
  return sentAt + ttlMs - driftMs(ttlMs);
}

/** How long, and how many, grant messages for not-yet-registered waiters are kept. */
const earlyKeepMs = 5_000;
const earlyKeepMax = 10_000;

/** The drift allowance core uses (1% + 2 ms, the Redlock spec's), so both bound a lease alike. */
function driftMs(ms: number): number {
  return Math.ceil(ms * 0.01) + 2;
}

/**
 * The waiting side of the lease mode's server queue, as the Redis fair mode's (packages/redis
 * src/modes/fair.ts): one acquire call queues us; the grant arrives as a message on the client's
 * channel, or is found by a re-check when the holder's lease runs out, or by the heartbeat tick (one
 * statement for every waiter of this client) that keeps our entries alive and reports entries gone
 * or locks free. A waiter that gives up leaves (sql.ts: the leave function passes on a grant that
 * raced it). A grant made by another client's statement carries a short claim, min(ttl, waiter
 * lease): it is extended to the ttl at the next tick, or at once when that would be too late.
 */
export class LeaseQueue {
  private readonly waiters = new Map<string, Waiter>();
  /** Grants that arrived by message with the short claim; extended to their ttl at the next tick. */
  private readonly unextended = new Set<QueuedGrant>();
  private readonly heartbeatMs: number;
  private tickTimer: NodeJS.Timeout | undefined;
  private ticking = false;
  private closed = false;
  private readonly leaving = new Set<Promise<unknown>>();
  /**
   * Grant messages for tokens not (yet) waiting: a grant can be sent as soon as the queueing call
   * commits, before its reply has registered the waiter. Kept briefly for that waiter.
   */
  private readonly early = new Map<string, { payload: string; at: number }>();

  constructor(private readonly port: LeaseQueuePort) {
    this.heartbeatMs = Math.max(1, Math.floor(port.waiterLeaseMs / 3));
    port.listener.subscribeGrants({
      channel: port.channel,
      onGrant: (payload) => this.onGrantMessage(payload),
      onBroken: () => {
        for (const waiter of [...this.waiters.values()]) waiter.recheck();
      },
    });
  }

  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    if (signal.aborted || this.closed) return undefined;
    const token = randomToken();
    const sentAt = Date.now();
    const row = await this.port.attempt(request, token, true);
    if (row.held) return this.grantOf(request, token, Number(row.fence), validFrom(row.sentAt, request.ttlMs));
    request.onContended?.();
    return this.waitForGrant(request, token, Math.max(sentAt, row.sentAt), row.remaining_ms, deadline, signal);
  }

  /** A confirmed extension to `ttlMs` sent at `sentAt`: a grant that carries its own bound moves it. */
  extended(grant: Grant, sentAt: number, ttlMs: number): void {
    const queued = grant as QueuedGrant;
    if (queued.validUntil !== undefined) queued.validUntil = sentAt + ttlMs - driftMs(ttlMs);
    if (this.unextended.size > 0) this.unextended.delete(queued);
  }

  /** A released grant needs no extension. */
  forget(grant: Grant): void {
    if (this.unextended.size > 0) this.unextended.delete(grant as QueuedGrant);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopTicking();
    for (const waiter of [...this.waiters.values()]) waiter.cancel();
    await Promise.allSettled([...this.leaving]);
  }

  crash(): void {
    this.closed = true;
    this.stopTicking();
    for (const waiter of [...this.waiters.values()]) waiter.halt();
    this.waiters.clear();
    this.unextended.clear();
  }

  private grantOf(request: AcquireRequest, token: string, fence: number, validUntil?: number): QueuedGrant {
    const grant = grantOf(request, token, fence, validUntil) as QueuedGrant & { ttlMs: number };
    grant.ttlMs = request.ttlMs;
    return grant;
  }

  private waitForGrant(
    request: AcquireRequest,
    token: string,
    sentAt: number,
    remainingMs: number | null,
    deadline: number,
    signal: AbortSignal,
  ): Promise<Grant | undefined> {
    return new Promise<Grant | undefined>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let checking = false;
      /** The latest re-check's call: a leave waits for it (see leave). */
      let check: Promise<unknown> | undefined;
      const finish = (): void => {
        waiter.done = true;
        if (timer !== undefined) clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.waiters.delete(token);
        if (this.waiters.size === 0 && this.unextended.size === 0) this.stopTicking();
      };
      const waiter: Waiter = {
        request,
        token,
        waitingSeenAt: sentAt,
        done: false,
        grant: (grant) => {
          if (waiter.done) return;
          finish();
          resolve(grant);
        },
        stillWaiting: (holderRemainingMs, checkedAt) => {
          if (waiter.done) return;
          if (checkedAt > waiter.waitingSeenAt) waiter.waitingSeenAt = checkedAt;
          if (timer !== undefined) clearTimeout(timer);
          // Re-check when the holder's lease runs out (its crash needs no event), or at the deadline.
          const recheckAt = holderRemainingMs !== null ? Date.now() + holderRemainingMs + 1 : Date.now() + this.heartbeatMs;
          timer = setTimeout(onTimer, Math.max(0, Math.min(deadline, recheckAt) - Date.now()));
        },
        recheck: () => {
          if (waiter.done || checking) return;
          if (timer !== undefined) clearTimeout(timer);
          onTimer();
        },
        cancel: () => leave(),
        halt: () => {
          if (waiter.done) return;
          finish();
          resolve(undefined);
        },
      };
      const leave = (): void => {
        if (waiter.done) return;
        finish();
        // A re-check still under way runs the acquire function, which queues us again or takes the
        // lock for us; sent on another connection, a leave could overtake it on the server and leave
        // that entry or grant behind. So the leave goes once the re-check has settled.
        this.giveUp(waiter, checking ? check : undefined).then(() => resolve(undefined), reject);
      };
      const onAbort = (): void => leave();
      const onTimer = (): void => {
        timer = undefined;
        if (waiter.done) return;
        if (Date.now() >= deadline) return leave();
        const checkedAt = Date.now();
        checking = true;
        const attempt = this.port.attempt(request, token, true);
        check = attempt;
        attempt.then(
          (row) => {
            checking = false;
            if (row.held) waiter.grant(this.grantOf(request, token, Number(row.fence), validFrom(row.sentAt, request.ttlMs)));
            else waiter.stillWaiting(row.remaining_ms, Math.max(checkedAt, row.sentAt));
          },
          (error: unknown) => {
            checking = false;
            if (waiter.done) return;
            finish();
            // The call's undo already leaves (the guard retries it until the server answers).
            reject(error);
          },
        );
      };
      this.waiters.set(token, waiter);
      if (signal.aborted || this.closed) return leave();
      signal.addEventListener('abort', onAbort, { once: true });
      this.startTicking();
      waiter.stillWaiting(remainingMs, sentAt);
      const ready = this.port.listener.grantsReady();
      // Queued before our LISTEN was live: a grant may already have been sent unheard.
      if (ready !== true) void ready.then(() => waiter.recheck());
      // Or it arrived before this waiter was registered (the grant follows the queueing call's commit).
      const early = this.early.get(token);
      if (early !== undefined) {
        this.early.delete(token);
        this.onGrantMessage(early.payload);
      }
    });
  }

  /**
   * The leave function: no entry left behind; a grant that raced us is passed on by the server.
   * After `pending` (a call of ours on the key still under way) has settled, when given.
   */
  private giveUp(waiter: Waiter, pending?: Promise<unknown>): Promise<void> {
    waiter.done = true;
    this.waiters.delete(waiter.token);
    const leaveNow = (): Promise<void> => this.port.leave(waiter.request, waiter.token);
    const left = pending === undefined ? leaveNow() : pending.then(leaveNow, leaveNow);
    this.leaving.add(left);
    const forget = (): void => {
      this.leaving.delete(left);
    };
    left.then(forget, forget);
    return left;
  }

  private onGrantMessage(payload: string): void {
    const [token, fenceText] = payload.split(' ');
    const waiter = this.waiters.get(token ?? '');
    if (waiter === undefined) {
      this.keepEarly(token ?? '', payload);
      return;
    }
    if (waiter.done) return;
    const { request } = waiter;
    // The grant started after waitingSeenAt and lasts min(ttl, the waiter deadline it had left),
    // and that deadline was at least waitingSeenAt + waiterLeaseMs.
    const claimMs = Math.min(request.ttlMs, this.port.waiterLeaseMs);
    const validUntil = waiter.waitingSeenAt + claimMs - driftMs(claimMs);
    const grant = this.grantOf(request, waiter.token, Number(fenceText), validUntil);
    grant.request = request;
    const leftMs = validUntil - Date.now();
    const short = claimMs < request.ttlMs;
    // A grant in place is claimed until min(ttl + delay, the waiter's deadline): with lock-delay it is
    // extended before the holder starts, so a crash from then on leaves the whole delay behind.
    const delayed = (request.lockDelayMs ?? 0) > 0;
    if (!delayed && (short ? leftMs > 2 * this.heartbeatMs : leftMs > request.ttlMs / 2)) {
      // Enough time left to extend at a later tick (most holds are released long before it).
      if (short) {
        this.unextended.add(grant);
        this.startTicking();
      }
      waiter.grant(grant);
      return;
    }
    // Too little left for a tick: extend now, before the holder starts.
    waiter.done = true; // no re-check or heartbeat may run for it meanwhile
    const sentAt = Date.now();
    this.port.extendOne(grant, request.ttlMs).then(
      (renewed) => {
        waiter.done = false;
        if (renewed) waiter.grant(grant);
        else waiter.stillWaiting(null, sentAt); // the claim ran out unheard: back to the queue's re-check
      },
      () => {
        waiter.done = false;
        waiter.stillWaiting(null, sentAt);
      },
    );
  }

  /** Keeps a message for a waiter about to register (bounded: old entries go first). */
  private keepEarly(token: string, payload: string): void {
    const now = Date.now();
    for (const [key, entry] of this.early) {
      if (now - entry.at < earlyKeepMs && this.early.size < earlyKeepMax) break;
      this.early.delete(key);
    }
    this.early.set(token, { payload, at: now });
  }

  // ---- the tick: heartbeats of queued waiters and extensions of fresh grants ------------------

  private startTicking(): void {
    if (this.tickTimer !== undefined || this.closed) return;
    this.tickTimer = setInterval(() => void this.tick(), this.heartbeatMs);
    this.tickTimer.unref();
  }

  private stopTicking(): void {
    if (this.tickTimer !== undefined) clearInterval(this.tickTimer);
    this.tickTimer = undefined;
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    const waiters = [...this.waiters.values()].filter((waiter) => !waiter.done);
    const grants = [...this.unextended];
    this.unextended.clear();
    if (waiters.length === 0 && grants.length === 0) {
      this.stopTicking();
      return;
    }
    this.ticking = true;
    // A LISTEN that failed (a connect timed out under load, a broken session) is retried here, not
    // only by the next acquire: meanwhile grants are found by the heartbeat below, up to a tick late each.
    if (waiters.length > 0) void this.port.listener.grantsReady();
    const sentAt = Date.now();
    try {
      await Promise.all([
        waiters.length === 0 ? undefined : this.heartbeat(waiters, sentAt),
        grants.length === 0 ? undefined : this.extend(grants, sentAt),
      ]);
    } finally {
      this.ticking = false;
    }
  }

  private async heartbeat(waiters: readonly Waiter[], sentAt: number): Promise<void> {
    try {
      const rows = await this.port.heartbeat(
        waiters.map((waiter) => waiter.token),
        waiters.map((waiter) => waiter.request.key),
      );
      const byToken = new Map(rows.map((row) => [row.token, row]));
      for (const waiter of waiters) {
        if (waiter.done) continue;
        const row = byToken.get(waiter.token);
        // Entry gone (granted to us unheard, or purged) or the lock free: look now.
        if (row === undefined || !row.queued || row.remaining_ms === null || row.remaining_ms <= 0) waiter.recheck();
        else if (sentAt > waiter.waitingSeenAt) waiter.waitingSeenAt = sentAt;
      }
    } catch {
      // Unknown outcome: the waiters re-check on their own timers.
    }
  }

  private async extend(grants: readonly QueuedGrant[], sentAt: number): Promise<void> {
    try {
      const renewed = await this.port.extend(
        grants,
        grants.map((grant) => grant.ttlMs),
      );
      for (const [index, grant] of grants.entries()) {
        if (renewed[index] === true) this.extended(grant, sentAt, grant.ttlMs);
        else grant.request?.onLost(grant, new Error('the lock granted by the queue expired before it could be extended'));
      }
    } catch {
      // Unknown: try again next tick, while the claim lasts.
      for (const grant of grants) if (grant.validUntil !== undefined && grant.validUntil > Date.now()) this.unextended.add(grant);
    }
  }
}
