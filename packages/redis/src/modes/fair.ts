import type { AcquireRequest, AttemptResult, Capabilities, Grant } from '@deadbolt/core/adapter';
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { GrantChannel } from '../grant-channel.js';
import { fenceKey, siblingKey, slotOf, tagOfSlot } from '../keys.js';
import { pipelined } from '../pipeline.js';
import { standaloneGrantPrefix } from '../lua.js';
import { pair, queueScript, runScript, type ScriptName } from '../scripts.js';
import { baseCapabilities, type LockMode } from './mode.js';
import { JitteredTicker } from '../jittered-ticker.js';
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

/** A grant plus what the mode needs to extend it: fields core treats as opaque. */
interface FairGrant extends Grant {
  validUntil?: number;
  readonly ttlMs: number;
  /** Only on grants that arrived by message (they are extended later, and may be reported lost). */
  request?: AcquireRequest;
}

/**
 * Fair (FIFO) locks with the hand-off done by the server (primitives.md section 1.3): the lock is
 * a plain token under the exact key (as in setnx, so SET NX clients still exclude it) and waiters
 * queue beside it. Release, expiry and a giving-up waiter GRANT the lock in place to the head
 * waiter inside the same script, then send one message to that waiter's client: a contended
 * hand-off costs one round trip (Redisson's RedissonFairLock notifies the head, which then has to
 * acquire again: two). The message only saves time: a waiter re-checks when its holder's lease
 * runs out (pttl + 1 ms) and on every heartbeat, and then finds its own token under the key.
 * Waiters heartbeat their queue entries in one pipeline per tick; a dead waiter is dropped by its
 * deadline on the server clock; a waiter that gives up leaves nothing behind and passes on a grant
 * that raced it. tryAcquire never barges past a non-empty queue.
 */
export class FairMode implements LockMode {
  readonly mode = 'fair' as const;
  readonly capabilities = fairCapabilities;
  readonly publishesReleases = false;
  /** Core skips its plain first attempt: acquire() takes a free lock in the same single script. */
  readonly acquireQueuesAtOnce = true;

  private readonly clientId = randomBytes(12).toString('hex');
  private sequence = 0;
  private readonly publish: 'PUBLISH' | 'SPUBLISH';
  private readonly grants: GrantChannel;
  private readonly waiters = new Map<string, QueuedWaiter>();
  /**
   * Tokens whose queueing script is in flight, with the fence of a grant message that arrived before
   * the script's reply (the subscriber socket can be read first in the same poll): kept for the
   * waiter, which would otherwise learn of its grant only at its next re-check (the holder's pttl
   * or a heartbeat later). Same as fair-kinds.ts.
   */
  private readonly inFlight = new Map<string, number | undefined>();
  /** Grants that arrived by message with the short claim; extended to their ttl at the next tick. */
  private readonly unextended = new Set<FairGrant>();
  private readonly heartbeatMs: number;
  private readonly ticker: JitteredTicker;
  private ticking = false;
  private closed = false;
  private readonly leaving = new Set<Promise<unknown>>();
  private readonly keyCache = new Map<string, readonly string[]>();
  /** The grant channel on a single server (one per client), named once. */
  private readonly channel: string;
  /** What every queued waiter of this mode calls back into (fair-waiter.ts): one object, not closures per wait. */
  private readonly host: WaiterHost;

  constructor(
    private readonly connection: Redis | Cluster,
    private readonly settings: FairSettings,
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
      giveUp: (waiter) => this.giveUp(waiter),
    };
  }

  async tryAcquire(request: AcquireRequest, token = this.tokenFor(request)): Promise<AttemptResult> {
    const [held, value] = pair(await this.attempt(request, token, '0'));
    if (held === 1) return { acquired: true, grant: this.grantOf(request, token, value) };
    return { acquired: false, retryAfterMs: Math.max(0, value) };
  }

  /** Takes a free lock, or queues and waits for the grant; undefined at the deadline or on abort. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    // The hot path of every fair acquire: one script, one reply, no promise layer of its own when free.
    const token = this.newToken(request.ttlMs);
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
      sent = this.attempt(request, token, '1');
    } catch (error) {
      return Promise.reject(error).catch(failed);
    }
    return sent.then((reply) => {
      let held: number;
      let value: number;
      try {
        [held, value] = pair(reply);
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

  /** The token format the fair scripts read ("<clientId>.<ttl>.<n>"): the backend asks for it before an attempt. */
  tokenFor(request: AcquireRequest): string {
    return this.newToken(request.ttlMs);
  }

  /** Undoes an attempt whose answer never came: fair-leave removes its entry and passes on a grant it got. */
  undoAcquire(request: AcquireRequest, token: string): Promise<unknown> {
    return runScript(this.connection, 'fair-leave', fairKeys(request.key), [token, this.channelPrefix(request.key), this.publish]);
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const sentAt = Date.now();
    const renewed = Number(await runScript(this.connection, 'compare-pexpire', [grant.key], [grant.token, ttlMs])) === 1;
    if (renewed) this.extended(grant as FairGrant, sentAt, ttlMs);
    return renewed;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]> {
    const sentAt = Date.now();
    const replies = await pipelined(
      this.connection,
      grants.map((grant) => grant.key),
      (pipeline, index) => queueScript(pipeline, 'compare-pexpire', [grants[index]!.key], [grants[index]!.token, ttlMs[index]!]),
    );
    return replies.map((reply, index) => {
      const renewed = Number(reply) === 1;
      if (renewed) this.extended(grants[index] as FairGrant, sentAt, ttlMs[index]!);
      return renewed;
    });
  }

  release(grant: Grant): Promise<boolean> {
    if (this.unextended.size > 0) this.unextended.delete(grant as FairGrant);
    const args = this.settings.cluster ? [grant.token, this.channelPrefix(grant.key), this.publish] : [grant.token];
    return runScript(this.connection, 'fair-release', this.keysOf(grant.key), args).then(isOne);
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

  /**
   * What a script prepends to the waiter's client id to name its grant channel. On Cluster the
   * channel must live in the key's slot (SPUBLISH from a script): one shard channel per slot.
   */
  private channelPrefix(key: string): string {
    return this.settings.cluster ? `{${tagOfSlot(slotOf(key))}}:${standaloneGrantPrefix}` : standaloneGrantPrefix;
  }

  /** "<clientId>.<ttl>.<n>": unique per backend (random client id), and the scripts read the rest. */
  private newToken(ttlMs: number): string {
    this.sequence += 1;
    return `${this.clientId}.${ttlMs}.${this.sequence.toString(36)}`;
  }

  /** fair-acquire: its reply is a pair() (the callers parse it, so the hot path has no promise layer here). */
  private attempt(request: AcquireRequest, token: string, join: '0' | '1'): Promise<unknown> {
    const { ttlMs, key } = request;
    const lease = this.settings.waiterLeaseMs;
    // On a single server the script defaults the channel arguments (standaloneGrantPrefix, PUBLISH).
    const args = this.settings.cluster ? [token, ttlMs, lease, join, this.channelPrefix(key), this.publish] : [token, ttlMs, lease, join];
    return runScript(this.connection, 'fair-acquire', this.keysOf(key), args);
  }

  /**
   * fairKeys(key), remembered for the keys in use: three sibling names built and flattened on every
   * acquire and release showed in the uncontended profile. Bounded: cleared when it fills up.
   */
  private keysOf(key: string): readonly string[] {
    let keys = this.keyCache.get(key);
    if (keys === undefined) {
      if (this.keyCache.size >= keyCacheSize) this.keyCache.clear();
      keys = fairKeys(key);
      this.keyCache.set(key, keys);
    }
    return keys;
  }

  private grantOf(request: AcquireRequest, token: string, fence: number, validUntil?: number): FairGrant {
    const grant: FairGrant = { key: request.key, owner: request.owner, token, fence, ttlMs: request.ttlMs };
    if (validUntil !== undefined) grant.validUntil = validUntil;
    return grant;
  }

  /** A confirmed extension to `ttlMs` sent at `sentAt`: a grant that carries its own bound moves it. */
  private extended(grant: FairGrant, sentAt: number, ttlMs: number): void {
    if (grant.validUntil !== undefined) grant.validUntil = sentAt + ttlMs - driftMs(ttlMs);
    if (this.unextended.size > 0) this.unextended.delete(grant);
  }

  private waitForGrant(
    request: AcquireRequest,
    token: string,
    sentAt: number,
    pttl: number,
    deadline: number,
    signal: AbortSignal,
  ): Promise<Grant | undefined> {
    return new Promise<Grant | undefined>((resolve, reject) => {
      const waiter = new QueuedWaiter(this.host, request, this.keysOf(request.key), token, sentAt, deadline, resolve, reject);
      this.waiters.set(token, waiter);
      const early = this.inFlight.get(token);
      this.inFlight.delete(token);
      if (signal.aborted || this.closed) return waiter.cancel();
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

  /** fair-leave: no entry left behind; a grant that raced us is passed on by the script. */
  private giveUp(waiter: QueuedWaiter): Promise<void> {
    waiter.done = true;
    this.waiters.delete(waiter.token);
    const left = runScript(this.connection, 'fair-leave', waiter.keys, [
      waiter.token,
      this.channelPrefix(waiter.request.key),
      this.publish,
    ]).then(() => undefined);
    this.leaving.add(left);
    const forget = (): void => {
      this.leaving.delete(left);
    };
    left.then(forget, forget);
    return left;
  }

  private onGrantMessage(token: string, fence: number): void {
    const waiter = this.waiters.get(token);
    if (waiter === undefined && this.inFlight.has(token)) {
      this.inFlight.set(token, fence);
      return;
    }
    if (waiter === undefined || waiter.done) return;
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
    runScript(this.connection, 'compare-pexpire', [request.key], [token, request.ttlMs]).then(
      (reply) => {
        waiter.done = false;
        if (Number(reply) === 1) {
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
    const calls: { name: ScriptName; keys: readonly string[]; args: (string | number)[] }[] = [
      ...waiters.map((waiter) => ({
        name: 'fair-acquire' as const,
        keys: waiter.keys,
        args: [waiter.token, waiter.request.ttlMs, this.settings.waiterLeaseMs, '1', this.channelPrefix(waiter.request.key), this.publish],
      })),
      ...grants.map((grant) => ({ name: 'compare-pexpire' as const, keys: [grant.key], args: [grant.token, grant.ttlMs] })),
    ];
    try {
      // One call (one waiter, the usual case per client) goes as a prepared command: an ioredis
      // pipeline builds a closure per defined script, and every client's tick would pay it.
      const only = calls.length === 1 ? calls[0]! : undefined;
      const replies =
        only !== undefined
          ? [await runScript(this.connection, only.name, only.keys, only.args)]
          : await pipelined(
              this.connection,
              calls.map((call) => call.keys[0]!),
              (pipeline, index) => queueScript(pipeline, calls[index]!.name, calls[index]!.keys, calls[index]!.args),
            );
      for (const [index, waiter] of waiters.entries()) {
        const [held, value] = pair(replies[index]);
        const { request, token } = waiter;
        if (held === 1) waiter.grant(this.grantOf(request, token, value, sentAt + request.ttlMs - driftMs(request.ttlMs)));
        else if (!waiter.done && sentAt > waiter.waitingSeenAt) waiter.waitingSeenAt = sentAt;
      }
      for (const [index, grant] of grants.entries()) {
        if (Number(replies[waiters.length + index]) === 1) this.extended(grant, sentAt, grant.ttlMs);
        else grant.request?.onLost(grant, new Error('the lock granted by the queue expired before it could be extended'));
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

/** How many keys' script KEYS a fair mode remembers (see keysOf). */
const keyCacheSize = 1_024;

/** The fair scripts' KEYS: the lock, its fencing counter, its queue and its waiters' deadlines (one slot). */
export function fairKeys(key: string): string[] {
  return [key, fenceKey(key), siblingKey(key, 'queue'), siblingKey(key, 'waiters')];
}
