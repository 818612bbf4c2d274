import type { AcquireRequest, Grant } from '../contract/requests.js';
import { onAbort } from './abort-fanout.js';
import type { QueueAnswer } from './server-queue-port.js';

/** What a waiter calls back into (server-queue.ts): one object per queue, shared by every wait. */
export interface WaiterHost {
  /** The heartbeat period: a waiter whose holder's lease is unknown re-checks after it. */
  readonly heartbeatMs: number;
  /** The queueing call again for this waiter's token: the re-check. */
  recheck(waiter: QueueWaiter): Promise<QueueAnswer>;
  /** The grant a queueing call found, bounded from `checkedAt` (the call's send time). */
  granted(waiter: QueueWaiter, fence: number, checkedAt: number): Grant;
  /** The waiter has an outcome: the queue forgets it (and stops its tick once nothing is left). */
  forget(waiter: QueueWaiter): void;
  /** Leaves the queue for the waiter's token (tracked, so close() waits for it), after `pending` when given. */
  giveUp(waiter: QueueWaiter, pending?: Promise<unknown>): Promise<void>;
  /** The error a waiter ended by close() rejects with. */
  closedError(waiter: QueueWaiter): Error;
}

/**
 * - waiting: queued; re-checks, heartbeats and grant messages act on it.
 * - extending: a grant message came with too short a claim, being extended before the holder
 *   starts; nothing else acts on it meanwhile, but it may still give up (its leave passes the grant on).
 * - done: it has an outcome, or is leaving.
 */
export type WaiterPhase = 'waiting' | 'extending' | 'done';

/**
 * One queued acquire, as one object: its state, its re-check timer and its outcome. A closure per
 * callback cost about ten allocations on every contended acquire; here a wait allocates this
 * object, its promise and one abort handler.
 */
export class QueueWaiter {
  /** Send time of the latest call that found us still queued: no grant to us started before it. */
  waitingSeenAt: number;
  phase: WaiterPhase = 'waiting';
  private timer: NodeJS.Timeout | undefined;
  private detach: (() => void) | undefined;
  /** A re-check is in flight; one asked for meanwhile runs once after it (`again`). */
  private checking = false;
  private again = false;
  /** The latest re-check's call: a leave waits for it (see `leaveAfterCheck`). */
  private check: Promise<unknown> | undefined;

  constructor(
    private readonly host: WaiterHost,
    readonly request: AcquireRequest,
    readonly token: string,
    queuedAt: number,
    private readonly deadline: number,
    private readonly resolve: (grant: Grant | undefined) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.waitingSeenAt = queuedAt;
  }

  /** Gives up when `signal` aborts (the caller's signal or the client's close). */
  listen(signal: AbortSignal): void {
    this.detach = onAbort(signal, () => this.cancel());
  }

  grant(grant: Grant): void {
    if (this.phase === 'done') return;
    this.finish();
    this.resolve(grant);
  }

  /** A call found us still queued, sent at `checkedAt`: re-check when the holder's lease runs out. */
  stillWaiting(holderRemainingMs: number | null, checkedAt: number): void {
    if (this.phase !== 'waiting') return;
    if (checkedAt > this.waitingSeenAt) this.waitingSeenAt = checkedAt;
    if (this.timer !== undefined) clearTimeout(this.timer);
    // The holder's crash needs no event: its lease running out is the next moment to look.
    const now = Date.now();
    const recheckAt = holderRemainingMs === null ? now + this.host.heartbeatMs : now + Math.max(0, holderRemainingMs) + 1;
    this.timer = setTimeout(onRecheckTimer, Math.max(0, Math.min(this.deadline, recheckAt) - now), this);
  }

  /** Re-checks now, or once the re-check in flight has answered (a message may have gone unheard). */
  recheckSoon(): void {
    if (this.phase !== 'waiting') return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.recheck();
  }

  /** The re-check timer fired. */
  timerFired(): void {
    this.timer = undefined;
    this.recheck();
  }

  /** Leaves at the deadline, else asks the server; coalesced: never two re-checks of one waiter side by side. */
  private recheck(): void {
    if (this.phase !== 'waiting') return;
    if (this.checking) {
      this.again = true;
      return;
    }
    if (Date.now() >= this.deadline) return this.cancel();
    const checkedAt = Date.now();
    this.checking = true;
    const call = this.host.recheck(this);
    this.check = call;
    call.then(
      (answer) => {
        this.checking = false;
        if (this.phase !== 'waiting') return;
        const sentAt = Math.max(checkedAt, answer.sentAt ?? checkedAt);
        if (answer.held) return this.grant(this.host.granted(this, answer.fence, sentAt));
        this.stillWaiting(answer.holderRemainingMs, sentAt);
        if (this.again) {
          this.again = false;
          this.recheckSoon();
        }
      },
      (error: unknown) => {
        this.checking = false;
        if (this.phase !== 'waiting') return;
        // The port's attempt undoes itself (its guard leaves by token): report the failure.
        this.finish();
        this.reject(error);
      },
    );
  }

  /** Gives up (deadline, abort): leaves the queue, then resolves undefined. */
  cancel(): void {
    if (this.phase === 'done') return;
    this.finish();
    this.leaveAfterCheck().then(() => this.resolve(undefined), this.reject);
  }

  /** The queue is closing: leaves, then rejects with the closed error whatever the leave answered. */
  close(): void {
    if (this.phase === 'done') return;
    this.finish();
    const closed = (): void => this.reject(this.host.closedError(this));
    this.leaveAfterCheck().then(closed, closed);
  }

  /**
   * The leave, once a re-check still under way has settled: that re-check runs the queueing call,
   * which queues us again or takes the lock for us, and sent on another connection (a PostgreSQL
   * pool) a leave could reach the server first and leave that entry or grant behind.
   */
  private leaveAfterCheck(): Promise<void> {
    return this.host.giveUp(this, this.checking ? this.check : undefined);
  }

  /** Stops without a word to the server (a simulated crash): no timer left, the entry stays queued. */
  halt(): void {
    if (this.phase === 'done') return;
    this.finish();
    this.resolve(undefined);
  }

  private finish(): void {
    this.phase = 'done';
    this.again = false;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.detach?.();
    this.host.forget(this);
  }
}

function onRecheckTimer(waiter: QueueWaiter): void {
  waiter.timerFired();
}
