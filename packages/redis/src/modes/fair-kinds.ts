import { InvalidArgumentError, type AcquireRequest, type AttemptResult, type Grant, type LockKind } from '@deadbolt/core/adapter';
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { GrantChannel } from '../grant-channel.js';
import { siblingKey, slotOf, tagOfSlot } from '../keys.js';
import { pipelined } from '../pipeline.js';
import { queueScript, runScript, type ScriptName } from '../scripts.js';
import { fairCapabilities, type FairSettings } from './fair.js';
import type { LockMode } from './mode.js';

/** A grant of a read, write or permit hold; fields core treats as opaque. */
interface KindGrant extends Grant {
  validUntil?: number;
  readonly ttlMs: number;
  /** Only on grants that arrived by message (extended at the next tick, and may be reported lost). */
  request?: AcquireRequest;
}

/** One queued acquire. */
interface Waiter {
  readonly request: AcquireRequest;
  readonly token: string;
  /** Send time of the latest script that found us still waiting: no grant to us started before it. */
  waitingSeenAt: number;
  /** Set once the acquire has an outcome or is giving up: later messages and replies are ignored. */
  done: boolean;
  grant(grant: KindGrant): void;
  /** A re-check or heartbeat answered: re-check after the first holder's lease end, or a heartbeat. */
  stillWaiting(retryMs: number, sentAt: number): void;
  cancel(): void;
  halt(): void;
}

/** The drift allowance core uses (1% + 2 ms, the Redlock spec's), so both bound a lease alike. */
function driftMs(ms: number): number {
  return Math.ceil(ms * 0.01) + 2;
}

/** One letter per kind, read by the scripts from the token (kinds-lua.ts). */
const modeLetter = { read: 'r', write: 'w', permit: 'p' } as const;

/**
 * The five keys of a read-write lock or a semaphore on `key`, in one hash slot (kinds-lua.ts). They
 * are apart from the key's mutex and from each other: a lock, a read-write lock and a semaphore of
 * one name are three locks.
 */
export function kindKeys(key: string, kind: 'rw' | 'sem'): string[] {
  return ['holders', 'meta', 'queue', 'waiters', 'fence'].map((part) => siblingKey(key, `${kind}:${part}`));
}

function keysOf(key: string, token: string): string[] {
  return kindKeys(key, token.charAt(token.lastIndexOf('.') + 1) === 'p' ? 'sem' : 'rw');
}

function pair(reply: unknown): [number, number] {
  if (Array.isArray(reply) && reply.length === 2) return [Number(reply[0]), Number(reply[1])];
  throw new Error(`unexpected script reply ${JSON.stringify(reply)}`);
}

/**
 * Read-write locks and semaphores of the fair mode (issue 16): holders with server-clock leases,
 * FIFO across modes with runs of readers admitted together, room granted in place to the head by
 * the script that frees it, one message to that waiter's client (kinds-lua.ts). The waiting side
 * works as the fair mutex's (modes/fair.ts): the message only saves time; a waiter re-checks when
 * the first holder's lease ends and heartbeats its queue entry in one pipeline per tick, a grant
 * that came by message carries a short claim that the next tick extends, and a waiter that gives
 * up leaves nothing behind. It has its own client id, grant channel and subscriber socket, so the
 * fair mutex's hot path is untouched.
 */
export class FairKinds implements LockMode {
  readonly mode = 'fair' as const;
  readonly capabilities = fairCapabilities;
  readonly publishesReleases = false;

  private readonly clientId = randomBytes(12).toString('hex');
  private readonly tokenStart = `${this.clientId}.`;
  private sequence = 0;
  private readonly publish: 'PUBLISH' | 'SPUBLISH';
  private readonly grants: GrantChannel;
  private readonly waiters = new Map<string, Waiter>();
  private readonly unextended = new Set<KindGrant>();
  private readonly heartbeatMs: number;
  private tickTimer: NodeJS.Timeout | undefined;
  private ticking = false;
  private closed = false;
  private readonly leaving = new Set<Promise<unknown>>();

  constructor(
    private readonly connection: Redis | Cluster,
    private readonly settings: FairSettings,
    private readonly backendName: string,
  ) {
    this.heartbeatMs = Math.max(1, Math.floor(settings.waiterLeaseMs / 3));
    this.publish = settings.cluster ? 'SPUBLISH' : 'PUBLISH';
    this.grants = new GrantChannel(settings.openSubscriber, settings.cluster, (token, fence) => this.onGrantMessage(token, fence));
  }

  /** Whether a grant is one of ours (a read, write or permit), by its token. */
  owns(grant: Grant): boolean {
    return grant.token.startsWith(this.tokenStart);
  }

  tokenFor(request: AcquireRequest): string {
    this.sequence += 1;
    return `${this.tokenStart}${request.ttlMs}.${modeLetter[kindOf(request).type]}${this.sequence.toString(36)}`;
  }

  async tryAcquire(request: AcquireRequest, token = this.tokenFor(request)): Promise<AttemptResult> {
    const [held, value] = await this.attempt(request, token, '0');
    if (held === 1) return { acquired: true, grant: this.grantOf(request, token, value) };
    return { acquired: false, retryAfterMs: Math.max(0, value) };
  }

  /** Takes a free hold, or queues and waits for the grant; undefined at the deadline or on abort. */
  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    const token = this.tokenFor(request);
    const sentAt = Date.now();
    const [held, value] = await this.attempt(request, token, '1').catch((error: unknown) => {
      void this.undoAcquire(request, token).catch(() => undefined);
      throw error;
    });
    if (held === 1) return this.grantOf(request, token, value);
    request.onContended?.();
    return this.waitForGrant(request, token, sentAt, value, deadline, signal);
  }

  undoAcquire(request: AcquireRequest, token: string): Promise<unknown> {
    return runScript(this.connection, 'kind-leave', keysOf(request.key, token), [token, this.channelPrefix(request.key), this.publish]);
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const sentAt = Date.now();
    const renewed = Number(await runScript(this.connection, 'kind-renew', keysOf(grant.key, grant.token), [grant.token, ttlMs])) === 1;
    if (renewed) this.extended(grant as KindGrant, sentAt, ttlMs);
    return renewed;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]> {
    const sentAt = Date.now();
    const replies = await pipelined(
      this.connection,
      grants.map((grant) => grant.key),
      (pipeline, index) =>
        queueScript(pipeline, 'kind-renew', keysOf(grants[index]!.key, grants[index]!.token), [grants[index]!.token, ttlMs[index]!]),
    );
    return replies.map((reply, index) => {
      const renewed = Number(reply) === 1;
      if (renewed) this.extended(grants[index] as KindGrant, sentAt, ttlMs[index]!);
      return renewed;
    });
  }

  async release(grant: Grant): Promise<boolean> {
    if (this.unextended.size > 0) this.unextended.delete(grant as KindGrant);
    const reply = await runScript(this.connection, 'kind-release', keysOf(grant.key, grant.token), [
      grant.token,
      this.channelPrefix(grant.key),
      this.publish,
    ]);
    return Number(reply) === 1;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopTicking();
    for (const waiter of [...this.waiters.values()]) waiter.cancel();
    await Promise.allSettled([...this.leaving]);
  }

  /** As a killed process: no more ticks, re-checks or leaves. */
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

  /** As the fair mutex's (modes/fair.ts): on Cluster one shard channel per slot, for SPUBLISH from a script. */
  private channelPrefix(key: string): string {
    return this.settings.cluster ? `{${tagOfSlot(slotOf(key))}}:deadbolt:grant:` : 'deadbolt:grant:';
  }

  private async attempt(request: AcquireRequest, token: string, join: '0' | '1'): Promise<[number, number]> {
    const kind = kindOf(request);
    const reply = pair(
      await runScript(this.connection, 'kind-acquire', keysOf(request.key, token), [
        token,
        request.ttlMs,
        this.settings.waiterLeaseMs,
        join,
        this.channelPrefix(request.key),
        this.publish,
        kind.type === 'permit' ? kind.permits : '',
        kind.type === 'read' && kind.downgradeOf !== undefined ? kind.downgradeOf.token : '',
      ]),
    );
    if (reply[0] === -1 && kind.type === 'permit') {
      throw new InvalidArgumentError(
        'permits',
        `the semaphore is in use with ${reply[1]} permits, not ${kind.permits}; every client of one key must pass the same permits`,
        { key: request.key, backend: this.backendName },
      );
    }
    return reply;
  }

  private grantOf(request: AcquireRequest, token: string, fence: number, validUntil?: number): KindGrant {
    const grant: KindGrant = { key: request.key, owner: request.owner, token, fence, ttlMs: request.ttlMs };
    if (validUntil !== undefined) grant.validUntil = validUntil;
    return grant;
  }

  private extended(grant: KindGrant, sentAt: number, ttlMs: number): void {
    if (grant.validUntil !== undefined) grant.validUntil = sentAt + ttlMs - driftMs(ttlMs);
    if (this.unextended.size > 0) this.unextended.delete(grant);
  }

  private waitForGrant(
    request: AcquireRequest,
    token: string,
    sentAt: number,
    retryMs: number,
    deadline: number,
    signal: AbortSignal,
  ): Promise<Grant | undefined> {
    return new Promise<Grant | undefined>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
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
        stillWaiting: (firstLeaseMs, checkedAt) => {
          if (waiter.done) return;
          if (checkedAt > waiter.waitingSeenAt) waiter.waitingSeenAt = checkedAt;
          if (timer !== undefined) clearTimeout(timer);
          // Re-check when the first holder's lease ends (a crash needs no event), or at the deadline;
          // the tick's heartbeat re-checks meanwhile.
          const recheckAt = Date.now() + (firstLeaseMs >= 0 ? firstLeaseMs + 1 : this.heartbeatMs);
          timer = setTimeout(onTimer, Math.max(0, Math.min(deadline, recheckAt) - Date.now()));
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
        this.giveUp(request, token).then(() => resolve(undefined), reject);
      };
      const onAbort = (): void => leave();
      const onTimer = (): void => {
        timer = undefined;
        if (waiter.done) return;
        if (Date.now() >= deadline) return leave();
        const checkedAt = Date.now();
        this.attempt(request, token, '1').then(
          ([held, value]) => {
            if (held === 1) waiter.grant(this.grantOf(request, token, value, checkedAt + request.ttlMs - driftMs(request.ttlMs)));
            else waiter.stillWaiting(value, checkedAt);
          },
          (error: unknown) => {
            if (waiter.done) return;
            finish();
            this.giveUp(request, token).then(
              () => reject(error),
              () => reject(error),
            );
          },
        );
      };
      this.waiters.set(token, waiter);
      if (signal.aborted || this.closed) return leave();
      signal.addEventListener('abort', onAbort, { once: true });
      this.startTicking();
      waiter.stillWaiting(retryMs, sentAt);
      const ready = this.grants.ready(this.channelPrefix(request.key) + this.clientId);
      // Queued before our subscription was live: a grant may already have been sent unheard.
      if (ready !== true)
        void ready.then(() => {
          if (waiter.done) return;
          if (timer !== undefined) clearTimeout(timer);
          onTimer();
        });
    });
  }

  /** kind-leave: no entry left behind; a grant that raced us is given back and passed on. */
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
    if (waiter === undefined || waiter.done) return;
    const { request } = waiter;
    // The grant started after waitingSeenAt and lasts min(ttl, the waiter deadline it had left).
    const claimMs = Math.min(request.ttlMs, this.settings.waiterLeaseMs);
    const validUntil = waiter.waitingSeenAt + claimMs - driftMs(claimMs);
    const grant = this.grantOf(request, token, fence, validUntil);
    grant.request = request;
    const leftMs = validUntil - Date.now();
    const short = claimMs < request.ttlMs;
    if (short ? leftMs > 2 * this.heartbeatMs : leftMs > request.ttlMs / 2) {
      if (short) {
        this.unextended.add(grant);
        this.startTicking();
      }
      waiter.grant(grant);
      return;
    }
    // Too little left for a tick: extend now, before the holder starts.
    waiter.done = true;
    const sentAt = Date.now();
    runScript(this.connection, 'kind-renew', keysOf(request.key, token), [token, request.ttlMs]).then(
      (reply) => {
        waiter.done = false;
        if (Number(reply) === 1) {
          this.extended(grant, sentAt, request.ttlMs);
          waiter.grant(grant);
        } else {
          waiter.stillWaiting(-1, sentAt);
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
    const sentAt = Date.now();
    const calls: { name: ScriptName; keys: readonly string[]; args: (string | number)[] }[] = [
      ...waiters.map((waiter) => {
        const kind = kindOf(waiter.request);
        return {
          name: 'kind-acquire' as const,
          keys: keysOf(waiter.request.key, waiter.token),
          args: [
            waiter.token,
            waiter.request.ttlMs,
            this.settings.waiterLeaseMs,
            '1',
            this.channelPrefix(waiter.request.key),
            this.publish,
            kind.type === 'permit' ? kind.permits : '',
            '',
          ],
        };
      }),
      ...grants.map((grant) => ({ name: 'kind-renew' as const, keys: keysOf(grant.key, grant.token), args: [grant.token, grant.ttlMs] })),
    ];
    try {
      const replies = await pipelined(
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

function kindOf(request: AcquireRequest): LockKind {
  if (request.kind === undefined) throw new Error('unreachable: a mutex request reached the read-write / semaphore scripts');
  return request.kind;
}
