import type { Grant } from './backend.js';
import { checkedOnRead } from './clock-signal.js';
import type { HoldKeeper } from './contract/drivers.js';

/**
 * What a client knows about one lock it holds: the grant, the timing of the lease, and how many
 * holds (re-entries) share it. One lease per (key, owner); every `Lock` handle points at one.
 */
export class Lease {
  holds = 1;
  lost = false;
  /** Core's own bound: the send time of the last confirmed grant or renewal + ttl - drift. */
  private ttlDeadline: number;
  /** Local time of the next automatic renewal (Infinity without autoRenew). */
  renewDueAt: number;
  renewing = false;
  /**
   * How little of the lease may be left, with a renewal failed or unanswered, before the lease is
   * in jeopardy ('expiring'). Set by the client from the acquire's options.
   */
  expiringThresholdMs: number;
  /** The failure of the last automatic renewal, until one is confirmed. */
  renewError: Error | undefined;
  /** In a jeopardy episode: 'expiring' was emitted and no renewal has been confirmed since. */
  inJeopardy = false;
  private abortController: AbortController | undefined;
  private jeopardyController: AbortController | undefined;
  private expiring: AbortSignal | undefined;

  /**
   * Made on first use: most locks are released without anyone looking at their signal, and an
   * AbortController costs more than the rest of an in-memory acquire. Its signal reads the clock
   * (clock-signal.ts): a signal saved before a stall says aborted at the first read after it.
   */
  get controller(): AbortController {
    if (this.abortController === undefined) {
      this.abortController = new AbortController();
      checkedOnRead(this.abortController.signal, () => this.checkClock());
    }
    return this.abortController;
  }

  /**
   * Declares the lease lost (through `expire`, the client's bookkeeping) when its local deadline has
   * passed while it is still held: every read of a hold's state calls this first, so a process that
   * was paused learns of the loss at its first look, before any timer runs. A lease whose holds were
   * all released is over and no longer the caller's concern.
   */
  checkClock(): void {
    if (!this.lost && this.holds > 0 && Date.now() >= this.expiresAt) this.expire(this);
  }

  constructor(
    readonly userKey: string,
    readonly fullKey: string,
    readonly owner: string,
    public grant: Grant,
    /** The driver that issued the grant: it alone renews, validates and releases it. */
    readonly keeper: HoldKeeper,
    readonly ttlMs: number,
    readonly autoRenew: boolean,
    readonly sessionBound: boolean,
    sentAt: number,
    /** Declares this lease lost because its deadline passed (the client's markLost). */
    private readonly expire: (lease: Lease) => void,
    /** Its id in the client's table: (key, owner) for the mutex, see kinds.ts for the others. */
    readonly id: string = leaseId(fullKey, owner),
  ) {
    this.ttlDeadline = this.deadlineFrom(sentAt);
    this.renewDueAt = autoRenew ? sentAt + Math.floor(ttlMs / 3) : Number.POSITIVE_INFINITY;
    this.expiringThresholdMs = Math.floor(ttlMs / 3);
  }

  /**
   * Aborts at the first jeopardy or at the loss, whichever comes first (made on first use, as
   * `controller`): one signal for work that must stop while there is still time.
   */
  get expiringSignal(): AbortSignal {
    if (this.expiring === undefined) {
      this.jeopardyController ??= new AbortController();
      this.expiring = checkedOnRead(AbortSignal.any([this.jeopardyController.signal, this.controller.signal]), () => this.checkClock());
    }
    return this.expiring;
  }

  /** Starts a jeopardy episode: the expiring signal aborts with the renewal's error (once; it never un-aborts). */
  enterJeopardy(error: Error): void {
    this.inJeopardy = true;
    this.jeopardyController ??= new AbortController();
    if (!this.jeopardyController.signal.aborted) this.jeopardyController.abort(error);
  }

  /**
   * Local time from which the lease is in jeopardy: a renewal has failed or is in flight and less
   * than the threshold is left. Infinity while renewals go through, once in jeopardy, and without
   * autoRenew (nobody renews: the caller chose the lease length).
   */
  get jeopardyAt(): number {
    if (!this.autoRenew || this.inJeopardy || this.lost || (this.renewError === undefined && !this.renewing))
      return Number.POSITIVE_INFINITY;
    return this.expiresAt - this.expiringThresholdMs;
  }

  /**
   * Local time after which the lease may have expired on the server: loss is declared then. Read
   * live: a backend that knows its lease better sets `grant.validUntil`, which then replaces core's
   * bound, also later on (a queued grant that started after the request was sent, then extended).
   */
  get expiresAt(): number {
    return this.grant.validUntil ?? this.ttlDeadline;
  }

  /** Records a confirmed renewal that was sent at `sentAt`. */
  confirmRenewal(sentAt: number): void {
    this.ttlDeadline = this.deadlineFrom(sentAt);
    // A confirmed renewal ends a jeopardy episode: the next failure may start another.
    this.renewError = undefined;
    this.inJeopardy = false;
    if (this.autoRenew) this.renewDueAt = sentAt + Math.floor(this.ttlMs / 3);
  }

  /**
   * The lease runs from when the request was SENT (the server started it later, so we err early),
   * minus a drift allowance of 1% + 2 ms for clocks that run at slightly different rates (the
   * drift factor of the Redlock algorithm, seed 004). Session-bound leases have no ttl of their own:
   * their backend bounds them with `grant.validUntil` (ZooKeeper: the last server contact + the
   * session timeout), or nothing does.
   */
  private deadlineFrom(sentAt: number): number {
    if (this.sessionBound) return Number.POSITIVE_INFINITY;
    return sentAt + this.ttlMs - Math.ceil(this.ttlMs * 0.01) - 2;
  }
}

export function leaseId(fullKey: string, owner: string): string {
  return `${fullKey}\u0000${owner}`;
}
