import type { AcquireRequest, AttemptResult, Capabilities, Grant } from '@deadbolt/core/adapter';
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { GrantChannel } from '../grant-channel.js';
import { JitteredTicker } from '../jittered-ticker.js';
import { fenceKey, siblingKey, slotOf, tagOfSlot } from '../keys.js';
import { standaloneGrantPrefix } from '../lua/fair.js';
import { pipelined } from '../pipeline.js';
import { pair, queueScript, runScript, type ScriptArgument, type ScriptName } from '../lua.js';
import { baseCapabilities } from './mode.js';
import { driftMs, QueuedWaiter, type WaiterHost } from './fair-waiter.js';

export const fairCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  fencing: true,
  reentrant: 'client',
  notifications: true,
  clock: 'server',
  fair: true,
  // Read-write locks and semaphores on the same queue machinery (modes/fair-kinds.ts, issue 16);
  // multi-locks queued on every key in one script per slot, elections with queued followers (issue 17).
  readWrite: true,
  semaphore: true,
  multi: 'atomic',
  election: true,
});

/** What the fair mode needs besides the command connection. */
export interface FairSettings {
  /** How long a silent waiter keeps its place (server clock); it heartbeats every third of it. */
  readonly waiterLeaseMs: number;
  /** Opens the subscriber socket of the grant channel (first contended acquire only). */
  readonly openSubscriber: () => Redis | Cluster;
  /** Redis Cluster: grants go out by SPUBLISH on per-slot shard channels (Redis 7 or later). */
  readonly cluster: boolean;
}

/** The fair scripts' KEYS: the lock, its fencing counter, its queue and its waiters' deadlines (one slot). */
export function fairKeys(key: string): string[] {
  return [key, fenceKey(key), siblingKey(key, 'queue'), siblingKey(key, 'waiters')];
}

/** One script call of a token: which script, on which KEYS, with which ARGV. */
export interface QueueScript {
  readonly name: ScriptName;
  readonly keys: readonly string[];
  readonly args: readonly ScriptArgument[];
}

/** A grant plus what the queue needs to extend it: fields core treats as opaque. */
export interface QueueGrant extends Grant {
  validUntil?: number;
  readonly ttlMs: number;
  /** Only on grants that arrived by message (they are extended later, and may be reported lost). */
  request?: AcquireRequest;
}

/**
 * The waiting side of the fair mode, shared by the fair mutex (modes/fair.ts) and its read-write
 * locks, semaphores, multi-locks and elections (modes/fair-kinds.ts); they differ only in the
 * scripts a token runs (the `…Call` methods). The server grants in place to the head waiter and
 * sends one message to that waiter's client (primitives.md section 1.3): a contended hand-off costs
 * one round trip. The message only saves time: a waiter re-checks when its holder's lease runs out
 * (pttl + 1 ms) and on every heartbeat, and then finds its own token under the key. Waiters
 * heartbeat their queue entries in one pipeline per tick; a dead waiter is dropped by its deadline
 * on the server clock; a waiter that gives up leaves nothing behind and passes on a grant that raced
 * it. Each instance has its own client id, grant channel and subscriber socket.
 */
export abstract class FairQueue {
  readonly mode = 'fair' as const;
  readonly capabilities = fairCapabilities;
  readonly publishesReleases = false;

  protected readonly clientId = randomBytes(12).toString('hex');
  /** Every token of this instance starts so ("<clientId>."): the scripts read the rest. */
  protected readonly tokenStart = `${this.clientId}.`;
  private sequence = 0;
  protected readonly publish: 'PUBLISH' | 'SPUBLISH';
  private readonly grants: GrantChannel;
  private readonly waiters = new Map<string, QueuedWaiter>();
  /**
   * Tokens whose queueing script is in flight, with the fence of a grant message that arrived before
   * the script's reply (the subscriber socket can be read first in the same poll): kept for the
   * waiter, which would otherwise learn of its grant only at its next re-check (the holder's pttl
   * or a heartbeat later).
   */
  protected readonly inFlight = new Map<string, number | undefined>();
  /** Grants that arrived by message with the short claim; extended to their ttl at the next tick. */
  protected readonly unextended = new Set<QueueGrant>();
  private readonly heartbeatMs: number;
  private readonly ticker: JitteredTicker;
  private ticking = false;
  private closed = false;
  private readonly leaving = new Set<Promise<unknown>>();
  /** The grant channel on a single server (one per instance), named once. */
  private readonly channel: string;
  /** What every queued waiter calls back into (fair-waiter.ts): one object, not closures per wait. */
  private readonly host: WaiterHost;

  constructor(
    protected readonly connection: Redis | Cluster,
    protected readonly settings: FairSettings,
  ) {
    this.heartbeatMs = Math.max(1, Math.floor(settings.waiterLeaseMs / 3));
    this.ticker = new JitteredTicker(this.heartbeatMs, () => void this.tick());
    this.channel = standaloneGrantPrefix + this.clientId;
    this.publish = settings.cluster ? 'SPUBLISH' : 'PUBLISH';
    this.grants = new GrantChannel(settings.openSubscriber, settings.cluster, (token, fence) => this.onGrantMessage(token, fence));
    this.host = {
      heartbeatMs: this.heartbeatMs,
      recheck: (waiter) => this.attempt(waiter.request, waiter.token, '1'),
      granted: (waiter, fence, validUntil) => this.grantOf(waiter.request, waiter.token, fence, validUntil),
      forget: (waiter) => {
        this.waiters.delete(waiter.token);
        if (this.waiters.size === 0 && this.unextended.size === 0) this.stopTicking();
      },
      giveUp: (waiter) => this.giveUp(waiter.request, waiter.token),
    };
  }

  /** The token of a new attempt: the backend asks for it before one (to undo it if no answer comes). */
  abstract tokenFor(request: AcquireRequest): string;

  /** The queueing script of `token` (join '1': queue if not free; '0': only take a free lock). */
  protected abstract acquireCall(request: AcquireRequest, token: string, join: '0' | '1'): QueueScript;

  /** The heartbeat of a queued `token`: its queueing script again (keeps the entry, or finds the grant). */
  protected heartbeatCall(request: AcquireRequest, token: string): QueueScript {
    return this.acquireCall(request, token, '1');
  }

  protected abstract releaseCall(key: string, token: string): QueueScript;
  protected abstract renewCall(key: string, token: string, ttlMs: number): QueueScript;
  /** Leaves the queue (or gives back a grant that raced the give-up, passing it on). */
  protected abstract leaveCall(key: string, token: string): QueueScript;

  /** A queueing script's reply as [held, value]: value is the fence when held, else the holder's pttl. */
  protected checked(_request: AcquireRequest, reply: [number, number]): [number, number] {
    return reply;
  }

  async tryAcquire(request: AcquireRequest, token = this.tokenFor(request)): Promise<AttemptResult> {
    const [held, value] = await this.attempt(request, token, '0');
    if (held === 1) return { acquired: true, grant: this.grantOf(request, token, value) };
    return { acquired: false, retryAfterMs: Math.max(0, value) };
  }

  /** Takes a free lock, or queues and waits for the grant; undefined at the deadline or on abort. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal, token = this.tokenFor(request)): Promise<Grant | undefined> {
    // The hot path of every fair acquire: one script, one reply, no promise layer of its own when free.
    const sentAt = Date.now();
    this.inFlight.set(token, undefined);
    const failed = (error: unknown): never => {
      this.inFlight.delete(token);
      // No answer (a frozen server runs it when it wakes): leave, so the entry or grant is not orphaned (issue 14).
      void this.undoAcquire(request, token).catch(() => undefined);
      throw error;
    };
    let sent: Promise<unknown>;
    try {
      sent = this.run(this.acquireCall(request, token, '1'));
    } catch (error) {
      return Promise.reject(error).catch(failed);
    }
    return sent.then((reply) => {
      let held: number;
      let value: number;
      try {
        [held, value] = this.checked(request, pair(reply));
      } catch (error) {
        return failed(error);
      }
      if (held === 1) {
        this.inFlight.delete(token);
        return this.grantOf(request, token, value);
      }
      request.onContended?.();
      return this.waitForGrant(request, token, sentAt, value, deadline, signal);
    }, failed);
  }

  /** Undoes an attempt whose answer never came: the leave script removes its entry and passes on a grant it got. */
  undoAcquire(request: AcquireRequest, token: string): Promise<unknown> {
    return this.run(this.leaveCall(request.key, token));
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const sentAt = Date.now();
    const renewed = isOne(await this.run(this.renewCall(grant.key, grant.token, ttlMs)));
    if (renewed) this.extended(grant as QueueGrant, sentAt, ttlMs);
    return renewed;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]> {
    const sentAt = Date.now();
    const replies = await pipelined(
      this.connection,
      grants.map((grant) => grant.key),
      (pipeline, index) => this.queue(pipeline, this.renewCall(grants[index]!.key, grants[index]!.token, ttlMs[index]!)),
    );
    return replies.map((reply, index) => {
      const renewed = isOne(reply);
      if (renewed) this.extended(grants[index] as QueueGrant, sentAt, ttlMs[index]!);
      return renewed;
    });
  }

  release(grant: Grant): Promise<boolean> {
    if (this.unextended.size > 0) this.unextended.delete(grant as QueueGrant);
    return this.run(this.releaseCall(grant.key, grant.token)).then(isOne);
  }

  /** A plain token under the key, as setnx's (the server's PX ends it). */
  async validate(grant: Grant): Promise<boolean> {
    return (await this.connection.get(grant.key)) === grant.token;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopTicking();
    // Waiters still queued leave (their core acquire is being aborted by the client's close anyway).
    for (const waiter of [...this.waiters.values()]) waiter.cancel();
    await Promise.allSettled([...this.leaving]);
  }

  /** As a killed process: no more ticks, re-checks or leaves (the backend drops the sockets). */
  crash(): void {
    this.closed = true;
    this.stopTicking();
    for (const waiter of [...this.waiters.values()]) waiter.halt();
    this.waiters.clear();
    this.unextended.clear();
  }

  /** The grant channel's subscriber socket, if one was opened, for the backend to close. */
  subscriber(): Redis | Cluster | undefined {
    return this.grants.close();
  }

  // ---- the pieces ------------------------------------------------------------------------------

  /** "<clientId>.<ttl>.<letter><n><suffix>": unique per instance (random client id); the scripts read the ttl and the letter. */
  protected newToken(ttlMs: number, letter = '', suffix = ''): string {
    this.sequence += 1;
    return `${this.tokenStart}${ttlMs}.${letter}${this.sequence.toString(36)}${suffix}`;
  }

  /**
   * What a script prepends to the waiter's client id to name its grant channel. On Cluster the
   * channel must live in the key's slot (SPUBLISH from a script): one shard channel per slot.
   */
  protected channelPrefix(key: string): string {
    return this.settings.cluster ? `{${tagOfSlot(slotOf(key))}}:${standaloneGrantPrefix}` : standaloneGrantPrefix;
  }

  protected run(call: QueueScript): Promise<unknown> {
    return runScript(this.connection, call.name, call.keys, call.args);
  }

  private queue(pipeline: Parameters<typeof queueScript>[0], call: QueueScript): void {
    queueScript(pipeline, call.name, call.keys, call.args);
  }

  private async attempt(request: AcquireRequest, token: string, join: '0' | '1'): Promise<[number, number]> {
    return this.checked(request, pair(await this.run(this.acquireCall(request, token, join))));
  }

  protected grantOf(request: AcquireRequest, token: string, fence: number, validUntil?: number): QueueGrant {
    const grant: QueueGrant = { key: request.key, owner: request.owner, token, fence, ttlMs: request.ttlMs };
    if (validUntil !== undefined) grant.validUntil = validUntil;
    return grant;
  }

  /** A confirmed extension to `ttlMs` sent at `sentAt`: a grant that carries its own bound moves it. */
  protected extended(grant: QueueGrant, sentAt: number, ttlMs: number): void {
    if (grant.validUntil !== undefined) grant.validUntil = sentAt + ttlMs - driftMs(ttlMs);
    if (this.unextended.size > 0) this.unextended.delete(grant);
  }

  protected waitForGrant(
    request: AcquireRequest,
    token: string,
    sentAt: number,
    pttl: number,
    deadline: number,
    signal: AbortSignal,
  ): Promise<Grant | undefined> {
    return new Promise<Grant | undefined>((resolve, reject) => {
      const waiter = new QueuedWaiter(this.host, request, token, sentAt, deadline, resolve, reject);
      this.waiters.set(token, waiter);
      const early = this.inFlight.get(token);
      this.inFlight.delete(token);
      if (signal.aborted || this.closed) return waiter.cancel();
      // Many waiters share one signal (the client's close): one listener on it, O(1) per waiter.
      waiter.listen(signal);
      this.startTicking();
      waiter.stillWaiting(pttl, sentAt);
      // A grant message that beat the queueing script's reply: take it now.
      if (early !== undefined) this.onGrantMessage(token, early);
      const ready = this.grants.ready(this.settings.cluster ? this.channelPrefix(request.key) + this.clientId : this.channel);
      // Queued before our subscription was live: a grant may already have been sent unheard.
      if (ready !== true) void ready.then(() => waiter.recheckNow());
    });
  }

  /** The leave script: no entry left behind; a grant that raced us is passed on by the script. */
  private giveUp(request: AcquireRequest, token: string): Promise<void> {
    this.waiters.delete(token);
    const left = this.undoAcquire(request, token).then(() => undefined);
    this.leaving.add(left);
    const forget = (): void => {
      this.leaving.delete(left);
    };
    left.then(forget, forget);
    return left;
  }

  private onGrantMessage(token: string, fence: number): void {
    const waiter = this.waiters.get(token);
    if (waiter === undefined) {
      if (this.inFlight.has(token)) this.inFlight.set(token, fence);
      return;
    }
    if (waiter.done) return;
    const { request } = waiter;
    // The grant started after waitingSeenAt and lasts min(ttl, the waiter deadline it had left),
    // and that deadline was at least waitingSeenAt + waiterLeaseMs.
    const claimMs = Math.min(request.ttlMs, this.settings.waiterLeaseMs);
    const validUntil = waiter.waitingSeenAt + claimMs - driftMs(claimMs);
    const grant = this.grantOf(request, token, fence, validUntil);
    grant.request = request;
    const leftMs = validUntil - Date.now();
    const short = claimMs < request.ttlMs;
    if (short ? leftMs > 2 * this.heartbeatMs : leftMs > request.ttlMs / 2) {
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
    this.run(this.renewCall(request.key, token, request.ttlMs)).then(
      (reply) => {
        waiter.done = false;
        if (isOne(reply)) {
          this.extended(grant, sentAt, request.ttlMs);
          waiter.grant(grant);
        } else {
          waiter.stillWaiting(-1, sentAt); // the claim ran out unheard: back to the queue's re-check
        }
      },
      () => {
        waiter.done = false;
        waiter.stillWaiting(-1, sentAt);
      },
    );
  }

  // ---- the tick: heartbeats of queued waiters and extensions of fresh grants, one pipeline ------

  private startTicking(): void {
    if (!this.closed) this.ticker.start();
  }

  private stopTicking(): void {
    this.ticker.stop();
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
    const sentAt = Date.now();
    const calls: QueueScript[] = [
      ...waiters.map((waiter) => this.heartbeatCall(waiter.request, waiter.token)),
      ...grants.map((grant) => this.renewCall(grant.key, grant.token, grant.ttlMs)),
    ];
    try {
      // One call (one waiter, the usual case per client) goes as a prepared command: an ioredis
      // pipeline builds a closure per defined script, and every client's tick would pay it.
      const only = calls.length === 1 ? calls[0]! : undefined;
      const replies =
        only !== undefined
          ? [await this.run(only)]
          : await pipelined(
              this.connection,
              calls.map((call) => call.keys[0]!),
              (pipeline, index) => this.queue(pipeline, calls[index]!),
            );
      for (const [index, waiter] of waiters.entries()) {
        const [held, value] = pair(replies[index]);
        const { request, token } = waiter;
        if (held === 1) waiter.grant(this.grantOf(request, token, value, sentAt + request.ttlMs - driftMs(request.ttlMs)));
        else if (!waiter.done && sentAt > waiter.waitingSeenAt) waiter.waitingSeenAt = sentAt;
      }
      for (const [index, grant] of grants.entries()) {
        if (isOne(replies[waiters.length + index])) this.extended(grant, sentAt, grant.ttlMs);
        else grant.request?.onLost(grant, new Error('the hold granted by the queue expired before it could be extended'));
      }
    } catch {
      // Unknown outcome: the waiters re-check on their own timers; the grants try again next tick.
      for (const grant of grants) if (grant.validUntil !== undefined && grant.validUntil > Date.now()) this.unextended.add(grant);
    } finally {
      this.ticking = false;
    }
  }
}

function isOne(reply: unknown): boolean {
  return Number(reply) === 1;
}
