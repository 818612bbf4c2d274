import { onAbort, type AcquireRequest, type Grant } from '@deadbolt/core/adapter';
import { pair } from '../lua.js';

/** What a queued waiter needs from its fair queue (fair-queue.ts): one object per queue, shared by every wait. */
export interface WaiterHost {
  /** The heartbeat period: a waiter whose holder's lease is unknown re-checks after it. */
  readonly heartbeatMs: number;
  /** The queueing script for a queued token (join '1'): the re-check; answers a pair(). */
  recheck(waiter: QueuedWaiter): Promise<unknown>;
  /** The grant a re-check found, valid until `validUntil` (client clock). */
  granted(waiter: QueuedWaiter, fence: number, validUntil: number): Grant;
  /** The waiter has an outcome: the mode forgets it (and stops its tick once nothing is left). */
  forget(waiter: QueuedWaiter): void;
  /** The leave script for the waiter's token: no entry left behind; a grant that raced it is passed on. */
  giveUp(waiter: QueuedWaiter): Promise<void>;
}

/**
 * One queued acquire of the fair mode (fair-queue.ts), as one object: its state, its re-check timer
 * and its outcome. A closure per callback (grant, re-check, timer, leave, finish...) cost about ten
 * allocations on every contended acquire; here a wait allocates this object, its promise and one
 * abort handler, and the re-check timer calls a module function with the waiter as its argument.
 */
export class QueuedWaiter {
  /** Send time of the latest script that found us still waiting: no grant to us started before it. */
  waitingSeenAt: number;
  /** Set once the acquire has an outcome or is giving up: later messages and replies are ignored. */
  done = false;
  private timer: NodeJS.Timeout | undefined;
  private detach: (() => void) | undefined;

  constructor(
    private readonly host: WaiterHost,
    readonly request: AcquireRequest,
    readonly token: string,
    sentAt: number,
    private readonly deadline: number,
    private readonly resolve: (grant: Grant | undefined) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.waitingSeenAt = sentAt;
  }

  /** Gives up when `signal` aborts (the caller's signal or the client's close). */
  listen(signal: AbortSignal): void {
    this.detach = onAbort(signal, () => this.cancel());
  }

  grant(grant: Grant): void {
    if (this.done) return;
    this.finish();
    this.resolve(grant);
  }

  /** A re-check, heartbeat or queueing script answered: the holder's remaining lease, to re-check after it. */
  stillWaiting(holderPttl: number, checkedAt: number): void {
    if (this.done) return;
    if (checkedAt > this.waitingSeenAt) this.waitingSeenAt = checkedAt;
    if (this.timer !== undefined) clearTimeout(this.timer);
    // Re-check when the holder's lease runs out (its crash needs no event), or at the deadline.
    const now = Date.now();
    const recheckAt = holderPttl >= 0 ? now + holderPttl + 1 : now + this.host.heartbeatMs;
    this.timer = setTimeout(onRecheckTimer, Math.max(0, Math.min(this.deadline, recheckAt) - now), this);
  }

  /** Gives up as on a timeout (an abort, the backend closing): leaves the queue, then resolves undefined. */
  cancel(): void {
    if (this.done) return;
    this.finish();
    this.host.giveUp(this).then(() => this.resolve(undefined), this.reject);
  }

  /** Stops without a word to the server (simulateCrash): no timer left, the entry stays queued. */
  halt(): void {
    if (this.done) return;
    this.finish();
    this.resolve(undefined);
  }

  /** Re-checks at once (the subscription went live after we queued: a grant may have gone unheard). */
  recheckNow(): void {
    if (this.done) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.recheck();
  }

  /** The re-check timer fired, or recheckNow: leave at the deadline, else ask the server. */
  recheck(): void {
    this.timer = undefined;
    if (this.done) return;
    if (Date.now() >= this.deadline) return this.cancel();
    const checkedAt = Date.now();
    this.host.recheck(this).then(
      (reply) => {
        const [held, value] = pair(reply);
        const { ttlMs } = this.request;
        if (held === 1) this.grant(this.host.granted(this, value, checkedAt + ttlMs - driftMs(ttlMs)));
        else this.stillWaiting(value, checkedAt);
      },
      (error: unknown) => {
        if (this.done) return;
        this.finish();
        // The server may still hold our entry: leave (best effort), then report the failure.
        const fail = (): void => this.reject(error);
        this.host.giveUp(this).then(fail, fail);
      },
    );
  }

  private finish(): void {
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.detach?.();
    this.host.forget(this);
  }
}

function onRecheckTimer(waiter: QueuedWaiter): void {
  waiter.recheck();
}

/** The drift allowance core uses (1% + 2 ms, the Redlock spec's), so both bound a lease alike. */
export function driftMs(ms: number): number {
  return Math.ceil(ms * 0.01) + 2;
}
