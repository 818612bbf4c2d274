import type { AcquireRequest, Grant } from '../contract/requests.js';
import { closedError } from './closed-error.js';
import { JitteredTicker } from './jittered-ticker.js';
import { leaseValidUntil } from './lease-bounds.js';
import type { GrantSink, HeartbeatAnswer, QueueAnswer, ServerQueuePort } from './server-queue-port.js';
import { QueueWaiter, type WaiterHost } from './server-queue-waiter.js';

/**
 * The client side of a FIFO queue kept by the server, which grants the lock in place to its head
 * waiter and sends that waiter's client one message, so a contended hand-off costs one round trip.
 * One queueing call takes a free lock or queues; the grant then arrives by message, or is found by
 * a re-check when the holder's lease runs out, or by the heartbeat tick that keeps this client's
 * entries alive (one port call for all of them). The message only saves time: the grant is already
 * in place on the server. A waiter that gives up leaves, and its leave passes on a grant that raced
 * it; a dead client's entries run out by the waiter lease on the server clock.
 *
 * A grant made by another client's call (a release, an expiry) is claimed only until
 * min(ttl, waiter lease) after we were last seen queued: it is extended to its ttl at the next
 * tick, or at once when the tick would come too late.
 *
 * The rules, the same for every adapter:
 * - a grant message for a token nobody waits for is kept only while that token's queueing call is
 *   in flight (the channel can be read before the call's reply); any other is dropped;
 * - a re-check asked for while one runs runs once after it answers, never beside it;
 * - every local deadline is `leaseValidUntil` of the send time that bounds it.
 */
export class ServerQueue<G extends Grant = Grant> {
  readonly heartbeatMs: number;
  private readonly waiters = new Map<string, QueueWaiter>();
  /** Tokens whose queueing call is in flight, with the fence of a grant message that beat its reply. */
  private readonly inFlight = new Map<string, number | undefined>();
  /** Grants that arrived by message with the short claim, and their requests: extended at the next tick. */
  private readonly unextended = new Map<G, AcquireRequest>();
  private readonly leaving = new Set<Promise<unknown>>();
  private readonly ticker: JitteredTicker;
  private readonly host: WaiterHost;
  private ticking = false;
  private closed = false;
  private crashed = false;

  constructor(private readonly port: ServerQueuePort<G>) {
    this.heartbeatMs = Math.max(1, Math.floor(port.waiterLeaseMs / 3));
    this.ticker = new JitteredTicker(this.heartbeatMs, () => void this.tick());
    this.host = {
      heartbeatMs: this.heartbeatMs,
      recheck: (waiter) => port.attempt(waiter.request, waiter.token),
      granted: (waiter, fence, checkedAt) =>
        port.grantOf(waiter.request, waiter.token, fence, leaseValidUntil(checkedAt, waiter.request.ttlMs)),
      forget: (waiter) => {
        if (this.waiters.get(waiter.token) === waiter) this.waiters.delete(waiter.token);
        if (this.waiters.size === 0 && this.unextended.size === 0) this.ticker.stop();
      },
      giveUp: (waiter, pending) => this.leave(waiter.request, waiter.token, pending),
      closedError: (waiter) => closedError('acquire', waiter.request.key, port.backend),
    };
    const sink: GrantSink = {
      granted: (token, fence) => this.onGrantMessage(token, fence),
      broken: () => {
        for (const waiter of [...this.waiters.values()]) waiter.recheckSoon();
      },
    };
    port.subscribe(sink);
  }

  /** How many acquires wait in the queue now. */
  get size(): number {
    return this.waiters.size;
  }

  /**
   * Takes a free lock, or queues and waits for the grant; undefined at the deadline or on abort.
   * A grant taken at once carries `validUntil` only when the answer says when its call left
   * (core bounds it from its own send time otherwise, by the same rule).
   */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal, token = this.port.tokenFor(request)): Promise<G | undefined> {
    if (this.closed) return Promise.reject(closedError('acquire', request.key, this.port.backend));
    if (signal.aborted) return Promise.resolve(undefined);
    const sentAt = Date.now();
    this.expect(token);
    let sent: Promise<QueueAnswer>;
    try {
      sent = this.port.attempt(request, token);
    } catch (error) {
      this.unexpect(token);
      return Promise.reject(error);
    }
    return sent.then(
      (answer) => {
        if (answer.held) {
          this.unexpect(token);
          const validUntil = answer.sentAt === undefined ? undefined : leaseValidUntil(answer.sentAt, request.ttlMs);
          return this.port.grantOf(request, token, answer.fence, validUntil);
        }
        request.onContended?.();
        const queuedAt = Math.max(sentAt, answer.sentAt ?? sentAt);
        return this.wait(request, token, queuedAt, answer.holderRemainingMs, deadline, signal);
      },
      (error: unknown) => {
        this.unexpect(token);
        throw error;
      },
    );
  }

  /**
   * The queueing call of `token` is about to be sent (by acquire, or by the adapter's own call that
   * queues many tokens at once): a grant message that beats its reply is kept for the wait.
   */
  expect(token: string): void {
    this.inFlight.set(token, undefined);
  }

  /** No wait follows `token`'s call (it was granted at once, or failed): its early message, if any, goes. */
  unexpect(token: string): void {
    this.inFlight.delete(token);
  }

  /**
   * Waits for the grant of `token`, queued by a call sent at `queuedAt` that saw the holder's lease
   * with `holderRemainingMs` left: by message, re-check or heartbeat; undefined at the deadline or
   * on abort (after leaving the queue).
   */
  wait(
    request: AcquireRequest,
    token: string,
    queuedAt: number,
    holderRemainingMs: number | null,
    deadline: number,
    signal: AbortSignal,
  ): Promise<G | undefined> {
    return new Promise<G | undefined>((resolve, reject) => {
      const waiter = new QueueWaiter(this.host, request, token, queuedAt, deadline, resolve as (grant: Grant | undefined) => void, reject);
      const early = this.inFlight.get(token);
      this.inFlight.delete(token);
      this.waiters.set(token, waiter);
      // A crashed client says nothing more to the server; a closed one leaves.
      if (this.crashed) return waiter.halt();
      if (this.closed) return waiter.close();
      if (signal.aborted) return waiter.cancel();
      // Many waiters share one signal (the client's close): one listener on it, O(1) per waiter.
      waiter.listen(signal);
      this.ticker.start();
      waiter.stillWaiting(holderRemainingMs, queuedAt);
      // A grant message that beat the queueing call's reply: take it now.
      if (early !== undefined) this.onGrantMessage(token, early);
      const ready = this.port.listening(request.key);
      // Queued before our subscription was live: a grant may already have been sent unheard.
      if (ready !== true) {
        const look = (): void => waiter.recheckSoon();
        void ready.then(look, look);
      }
    });
  }

  /** A confirmed extension of `grant` to `ttlMs`, sent at `sentAt`: moves its bound, if it carries one. */
  extended(grant: G, sentAt: number, ttlMs: number): void {
    if (grant.validUntil !== undefined) grant.validUntil = leaseValidUntil(sentAt, ttlMs);
    if (this.unextended.size > 0) this.unextended.delete(grant);
  }

  /** A released grant needs no extension. */
  forget(grant: G): void {
    if (this.unextended.size > 0) this.unextended.delete(grant);
  }

  /** Every waiter leaves and its acquire rejects with the closed error; resolves once the leaves answered. */
  async close(): Promise<void> {
    this.closed = true;
    this.ticker.stop();
    for (const waiter of [...this.waiters.values()]) waiter.close();
    await Promise.allSettled([...this.leaving]);
  }

  /** As a killed process: no more ticks, re-checks, extensions or leaves; the entries stay until the server drops them. */
  crash(): void {
    this.closed = true;
    this.crashed = true;
    this.ticker.stop();
    for (const waiter of [...this.waiters.values()]) waiter.halt();
    this.waiters.clear();
    this.unextended.clear();
    this.inFlight.clear();
  }

  // ---- the pieces ------------------------------------------------------------------------------

  /** The port's leave, tracked so close() waits for it; sent once `pending` (a call of ours still under way) has settled. */
  private leave(request: AcquireRequest, token: string, pending?: Promise<unknown>): Promise<void> {
    const send = () => this.port.leave(request, token);
    const left = (pending === undefined ? send() : pending.then(send, send)).then(() => undefined);
    this.leaving.add(left);
    const done = (): void => {
      this.leaving.delete(left);
    };
    left.then(done, done);
    return left;
  }

  private onGrantMessage(token: string, fence: number): void {
    const waiter = this.waiters.get(token);
    if (waiter === undefined) {
      if (this.inFlight.has(token)) this.inFlight.set(token, fence);
      return;
    }
    if (waiter.phase !== 'waiting') return;
    const { request } = waiter;
    // The grant started after waitingSeenAt and lasts min(ttl, the waiter deadline it had left),
    // and that deadline was at least waitingSeenAt + waiterLeaseMs.
    const claimMs = Math.min(request.ttlMs, this.port.waiterLeaseMs);
    const validUntil = leaseValidUntil(waiter.waitingSeenAt, claimMs);
    const grant = this.port.grantOf(request, token, fence, validUntil);
    const leftMs = validUntil - Date.now();
    const short = claimMs < request.ttlMs;
    // With a lock-delay the grant is extended before the holder starts, so a crash from then on
    // leaves the whole delay behind.
    const delayed = (request.lockDelayMs ?? 0) > 0;
    if (!delayed && (short ? leftMs > 2 * this.heartbeatMs : leftMs > request.ttlMs / 2)) {
      // Enough time left to extend at a later tick (most holds are released long before it).
      if (short) {
        this.unextended.set(grant, request);
        this.ticker.start();
      }
      waiter.grant(grant);
      return;
    }
    // Too little left for a tick: extend now, before the holder starts. Nothing else acts on the
    // waiter meanwhile; if it gives up, its leave passes the grant on.
    waiter.phase = 'extending';
    const sentAt = Date.now();
    const back = (renewed: boolean): void => {
      if (waiter.phase !== 'extending') return;
      waiter.phase = 'waiting';
      if (renewed) {
        this.extended(grant, sentAt, request.ttlMs);
        waiter.grant(grant);
      } else {
        waiter.stillWaiting(null, sentAt); // the claim ran out unheard: back to the re-checks
      }
    };
    this.port.extend([grant], [request.ttlMs]).then(
      (answers) => back(answers[0] === true),
      () => back(false),
    );
  }

  // ---- the tick: heartbeats of queued waiters and extensions of fresh grants -------------------

  private async tick(): Promise<void> {
    if (this.ticking || this.closed) return;
    const waiters = [...this.waiters.values()].filter((waiter) => waiter.phase === 'waiting');
    const grants = [...this.unextended];
    this.unextended.clear();
    if (waiters.length === 0 && grants.length === 0) {
      this.ticker.stop();
      return;
    }
    this.ticking = true;
    // A subscription that failed is tried again here, not only by the next acquire: meanwhile
    // grants are found by the heartbeat below, up to a tick late each.
    for (const key of new Set(waiters.map((waiter) => waiter.request.key))) void this.port.listening(key);
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

  private async heartbeat(waiters: readonly QueueWaiter[], sentAt: number): Promise<void> {
    let answers: readonly HeartbeatAnswer[];
    try {
      answers = await this.port.heartbeat(waiters);
    } catch {
      return; // unknown outcome: the waiters re-check on their own timers
    }
    for (const [index, waiter] of waiters.entries()) {
      const answer = answers[index];
      if (waiter.phase !== 'waiting' || answer === undefined) continue;
      if (answer === 'recheck') waiter.recheckSoon();
      else if (answer.held) waiter.grant(this.host.granted(waiter, answer.fence, Math.max(sentAt, answer.sentAt ?? sentAt)));
      else {
        const seenAt = Math.max(sentAt, answer.sentAt ?? sentAt);
        if (seenAt > waiter.waitingSeenAt) waiter.waitingSeenAt = seenAt;
      }
    }
  }

  private async extend(grants: readonly [G, AcquireRequest][], sentAt: number): Promise<void> {
    let answers: readonly boolean[];
    try {
      answers = await this.port.extend(
        grants.map(([grant]) => grant),
        grants.map(([, request]) => request.ttlMs),
      );
    } catch {
      // Unknown: try again next tick, while the claim lasts.
      if (this.crashed) return;
      const now = Date.now();
      for (const [grant, request] of grants)
        if (grant.validUntil !== undefined && grant.validUntil > now) this.unextended.set(grant, request);
      return;
    }
    for (const [index, [grant, request]] of grants.entries()) {
      if (answers[index] === true) this.extended(grant, sentAt, request.ttlMs);
      else if (!this.crashed) request.onLost(grant, new Error('the hold granted by the queue expired before it could be extended'));
    }
  }
}
