import {
  InvalidArgumentError,
  type AcquireRequest,
  type AttemptResult,
  type CampaignRequest,
  type Grant,
  type LockKind,
  type TermGrant,
} from '@deadbolt/core/adapter';
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { runFairEnqueueMany } from '../fair-multi-lua.js';
import { GrantChannel } from '../grant-channel.js';
import { siblingKey, slotOf, tagOfSlot } from '../keys.js';
import { pipelined } from '../pipeline.js';
import { queueScript, runScript, type ScriptArgument, type ScriptName } from '../scripts.js';
import { fairCapabilities, fairKeys, type FairSettings } from './fair.js';
import type { LockMode } from './mode.js';
import { JitteredTicker } from '../jittered-ticker.js';
import { driftMs, QueuedWaiter, type WaiterHost } from './fair-waiter.js';

/** A grant of a read, write or permit hold; fields core treats as opaque. */
interface KindGrant extends Grant {
  validUntil?: number;
  readonly ttlMs: number;
  /** Only on grants that arrived by message (extended at the next tick, and may be reported lost). */
  request?: AcquireRequest;
}

/** One queued acquire. */

/**
 * One letter per kind, read by the scripts from the token (kinds-lua.ts). Tokens of the mutex
 * family go through the fair mutex's own scripts: 'm' a key of a multi-lock, 'e' an election term.
 */
const modeLetter = { read: 'r', write: 'w', permit: 'p' } as const;
const letterOf = (token: string): string => token.charAt(token.lastIndexOf('.') + 1);
const isKindToken = (token: string): boolean => 'rwp'.includes(letterOf(token));

/** An election token carries the candidate's id (base64url: no '.', no space), so the lock's value names its leader. */
const electionToken = /^[^.]+\.\d+\.e[0-9a-z]+~([A-Za-z0-9_-]*)$/;

interface ScriptCall {
  readonly name: ScriptName;
  readonly keys: readonly string[];
  readonly args: readonly ScriptArgument[];
}

/**
 * The five keys of a read-write lock or a semaphore on `key`, in one hash slot (kinds-lua.ts). They
 * are apart from the key's mutex and from each other: a lock, a read-write lock and a semaphore of
 * one name are three locks.
 */
export function kindKeys(key: string, kind: 'rw' | 'sem'): string[] {
  return ['holders', 'meta', 'queue', 'waiters', 'fence'].map((part) => siblingKey(key, `${kind}:${part}`));
}

/** How many keys' script KEYS each primitive remembers (see keysOf). */
const keyCacheSize = 1_024;

/**
 * kindKeys(key, …) of a token's primitive, remembered for the keys in use (as the fair mutex's
 * keysOf): five sibling names built on every acquire, release and heartbeat otherwise. Bounded:
 * cleared when it fills up.
 */
const keyCaches = { rw: new Map<string, readonly string[]>(), sem: new Map<string, readonly string[]>() };

function keysOf(key: string, token: string): readonly string[] {
  const kind = letterOf(token) === 'p' ? 'sem' : 'rw';
  const cache = keyCaches[kind];
  let keys = cache.get(key);
  if (keys === undefined) {
    if (cache.size >= keyCacheSize) cache.clear();
    keys = kindKeys(key, kind);
    cache.set(key, keys);
  }
  return keys;
}

function isOne(reply: unknown): boolean {
  return Number(reply) === 1;
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
 * fair mutex's hot path is untouched. Multi-locks and election terms (issue 17) are fair mutex locks
 * taken through the same waiting machinery with their own tokens ('m', 'e'), so they too are
 * granted in place and heard on this channel.
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
  private readonly waiters = new Map<string, QueuedWaiter>();
  /**
   * Tokens whose queueing script is in flight, with the fence of a grant message that arrived before
   * the script's reply (the subscriber socket can be read first in the same poll): kept for the
   * waiter, which would otherwise learn of its grant only at its next re-check (a heartbeat later).
   */
  private readonly inFlight = new Map<string, number | undefined>();
  private readonly unextended = new Set<KindGrant>();
  private readonly heartbeatMs: number;
  private readonly ticker: JitteredTicker;
  private ticking = false;
  private closed = false;
  private readonly leaving = new Set<Promise<unknown>>();
  /** What every queued waiter calls back into (fair-waiter.ts): one object, not closures per wait. */
  private readonly host: WaiterHost;

  constructor(
    private readonly connection: Redis | Cluster,
    private readonly settings: FairSettings,
    private readonly backendName: string,
  ) {
    this.heartbeatMs = Math.max(1, Math.floor(settings.waiterLeaseMs / 3));
    this.ticker = new JitteredTicker(this.heartbeatMs, () => void this.tick());
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

  /** Whether a grant is one of ours (a read, write or permit), by its token. */
  owns(grant: Grant): boolean {
    return grant.token.startsWith(this.tokenStart);
  }

  tokenFor(request: AcquireRequest): string {
    return this.newToken(request.ttlMs, modeLetter[kindOf(request).type]);
  }

  private newToken(ttlMs: number, letter: string, suffix = ''): string {
    this.sequence += 1;
    return `${this.tokenStart}${ttlMs}.${letter}${this.sequence.toString(36)}${suffix}`;
  }

  async tryAcquire(request: AcquireRequest, token = this.tokenFor(request)): Promise<AttemptResult> {
    const [held, value] = await this.attempt(request, token, '0');
    if (held === 1) return { acquired: true, grant: this.grantOf(request, token, value) };
    return { acquired: false, retryAfterMs: Math.max(0, value) };
  }

  /** Takes a free hold, or queues and waits for the grant; undefined at the deadline or on abort. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal, token = this.tokenFor(request)): Promise<Grant | undefined> {
    // The hot path of every read, write and permit acquire: one script, one reply, no promise layer
    // of its own when free (as the fair mutex's acquire).
    const sentAt = Date.now();
    this.inFlight.set(token, undefined);
    const failed = (error: unknown): never => {
      this.inFlight.delete(token);
      // No answer (a frozen server runs it when it wakes): leave, so the entry or grant is not orphaned.
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

  undoAcquire(request: AcquireRequest, token: string): Promise<unknown> {
    return this.run(this.leaveCall(request.key, token));
  }

  /**
   * Elections on the fair queue (issue 17): a term is the fair lock on the election's key, its fence
   * the term, the candidate's id inside the token (so the lock's value names the leader), and the
   * followers wait in the queue, so a resignation (a release) grants the next one in place.
   */
  async campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    const token = this.newToken(request.ttlMs, 'e', `~${Buffer.from(request.candidate, 'utf8').toString('base64url')}`);
    const sentAt = Date.now();
    const grant = await this.acquire(request, deadline, signal, token);
    return grant && { ...grant, sentAt };
  }

  /** The current leader's id: read from the token under the election's key. */
  async leader(key: string): Promise<string | undefined> {
    const value = await this.connection.get(key);
    const encoded = value === null ? undefined : electionToken.exec(value)?.[1];
    return encoded === undefined ? undefined : Buffer.from(encoded, 'base64url').toString('utf8');
  }

  /**
   * Multi-key locks on the fair queue (issue 17): per hash slot, in the global (slot, key) order,
   * one script takes every free key and queues on every other (fair-multi-lua.ts), so two
   * multi-locks stand in the same order in every queue they share; then the call waits for the
   * grants of that slot before it enqueues in the next. At the deadline, on abort or on a failure,
   * every key taken is released and every queue entry left: nothing stays behind.
   */
  async acquireMany(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<Grant[] | undefined> {
    const taken: KindGrant[] = [];
    const giveBack = async (): Promise<void> => {
      await Promise.allSettled(taken.map((grant) => this.release(grant)));
    };
    try {
      let waited = false;
      // One script per hash slot on Cluster; a single server takes every key in one.
      for (const group of this.settings.cluster ? slotGroups(requests) : [requests]) {
        const got = await this.acquireGroup(group, deadline, signal);
        if (got === undefined) {
          await giveBack();
          return undefined;
        }
        taken.push(...got.grants);
        waited ||= got.waited;
      }
      // Keys taken early may have run out while later ones were awaited: confirm and extend all at once.
      if (waited && !(await this.confirmAll(taken))) {
        await giveBack();
        return Date.now() < deadline && !signal.aborted ? this.acquireMany(requests, deadline, signal) : undefined;
      }
    } catch (error) {
      await giveBack();
      throw error;
    }
    const byKey = new Map(taken.map((grant) => [grant.key, grant]));
    return requests.map((request) => byKey.get(request.key)!);
  }

  private async acquireGroup(
    group: readonly AcquireRequest[],
    deadline: number,
    signal: AbortSignal,
  ): Promise<{ grants: KindGrant[]; waited: boolean } | undefined> {
    const tokens = group.map((request) => this.newToken(request.ttlMs, 'm'));
    for (const token of tokens) this.inFlight.set(token, undefined);
    const prefix = this.channelPrefix(group[0]!.key);
    const sentAt = Date.now();
    const reply = (await runFairEnqueueMany(
      this.connection,
      group.flatMap((request) => fairKeys(request.key)),
      this.settings.waiterLeaseMs,
      prefix,
      this.publish,
      tokens,
    ).catch((error: unknown) => {
      for (const token of tokens) this.inFlight.delete(token);
      for (const [index, request] of group.entries()) void this.undoAcquire(request, tokens[index]!).catch(() => undefined);
      throw error;
    })) as unknown[];
    const grants: KindGrant[] = [];
    const waits: Promise<Grant | undefined>[] = [];
    const giveUp = new AbortController();
    const waitSignal = AbortSignal.any([signal, giveUp.signal]);
    for (const [index, request] of group.entries()) {
      const [held, value] = [Number(reply[2 * index]), Number(reply[2 * index + 1])];
      if (held === 1) this.inFlight.delete(tokens[index]!);
      if (held === 1) grants.push(this.grantOf(request, tokens[index]!, value, sentAt + request.ttlMs - driftMs(request.ttlMs)));
      else waits.push(this.waitForGrant(request, tokens[index]!, sentAt, value, deadline, waitSignal));
    }
    if (waits.length === 0) return { grants, waited: false };
    group[0]!.onContended?.();
    // One key not granted (deadline, abort, failure): the others leave too, and what came is given back.
    const outcomes = await Promise.allSettled(
      waits.map((wait) =>
        wait.then((grant) => {
          if (grant === undefined) giveUp.abort();
          return grant;
        }),
      ),
    );
    for (const outcome of outcomes) if (outcome.status === 'fulfilled' && outcome.value) grants.push(outcome.value as KindGrant);
    const failure = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (failure === undefined && grants.length === group.length) return { grants, waited: true };
    await Promise.allSettled(grants.map((grant) => this.release(grant)));
    if (failure) throw failure.reason;
    return undefined;
  }

  /** Re-checks every key in one pipeline (extending each still ours to its ttl); false if one is gone. */
  private async confirmAll(grants: readonly KindGrant[]): Promise<boolean> {
    const sentAt = Date.now();
    const replies = await pipelined(
      this.connection,
      grants.map((grant) => grant.key),
      (pipeline, index) => queueScript(pipeline, 'compare-pexpire', [grants[index]!.key], [grants[index]!.token, grants[index]!.ttlMs]),
    );
    for (const [index, grant] of grants.entries()) {
      if (Number(replies[index]) !== 1) return false;
      grant.validUntil = sentAt + grant.ttlMs - driftMs(grant.ttlMs);
      this.unextended.delete(grant);
    }
    return true;
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const sentAt = Date.now();
    const renewed = Number(await this.run(this.renewCall(grant.key, grant.token, ttlMs))) === 1;
    if (renewed) this.extended(grant as KindGrant, sentAt, ttlMs);
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
      const renewed = Number(reply) === 1;
      if (renewed) this.extended(grants[index] as KindGrant, sentAt, ttlMs[index]!);
      return renewed;
    });
  }

  release(grant: Grant): Promise<boolean> {
    if (this.unextended.size > 0) this.unextended.delete(grant as KindGrant);
    return this.run(this.releaseCall(grant.key, grant.token)).then(isOne);
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

  // ---- the scripts of a token: kinds (r, w, p) have their own, the mutex family (m, e) the fair mutex's

  private run(call: ScriptCall): Promise<unknown> {
    return runScript(this.connection, call.name, call.keys, call.args);
  }

  private queue(pipeline: Parameters<typeof queueScript>[0], call: ScriptCall): void {
    queueScript(pipeline, call.name, call.keys, call.args);
  }

  private acquireCall(request: AcquireRequest, token: string, join: '0' | '1', downgrade = true): ScriptCall {
    const channel = [this.channelPrefix(request.key), this.publish] as const;
    if (!isKindToken(token)) {
      return {
        name: 'fair-acquire',
        keys: fairKeys(request.key),
        args: [token, request.ttlMs, this.settings.waiterLeaseMs, join, ...channel],
      };
    }
    const kind = kindOf(request);
    const args: ScriptArgument[] = [
      token,
      request.ttlMs,
      this.settings.waiterLeaseMs,
      join,
      kind.type === 'permit' ? kind.permits : '',
      downgrade && kind.type === 'read' && kind.downgradeOf !== undefined ? kind.downgradeOf.token : '',
    ];
    // The channel only on Cluster (a single server's is the scripts' default), and no trailing '':
    // a plain read or write sends four arguments, as the fair mutex (kinds-lua.ts).
    if (this.settings.cluster) args.push(...channel);
    else while (args.at(-1) === '') args.pop();
    return { name: 'kind-acquire', keys: keysOf(request.key, token), args };
  }

  private leaveCall(key: string, token: string): ScriptCall {
    const args = [token, this.channelPrefix(key), this.publish];
    return isKindToken(token) ? { name: 'kind-leave', keys: keysOf(key, token), args } : { name: 'fair-leave', keys: fairKeys(key), args };
  }

  private releaseCall(key: string, token: string): ScriptCall {
    // The channel only on Cluster: a single server's is the release script's default.
    const args = this.settings.cluster ? [token, this.channelPrefix(key), this.publish] : [token];
    return isKindToken(token)
      ? { name: 'kind-release', keys: keysOf(key, token), args }
      : { name: 'fair-release', keys: fairKeys(key), args };
  }

  private renewCall(key: string, token: string, ttlMs: number): ScriptCall {
    return isKindToken(token)
      ? { name: 'kind-renew', keys: keysOf(key, token), args: [token, ttlMs] }
      : { name: 'compare-pexpire', keys: [key], args: [token, ttlMs] };
  }

  private async attempt(request: AcquireRequest, token: string, join: '0' | '1'): Promise<[number, number]> {
    return this.checked(request, pair(await this.run(this.acquireCall(request, token, join))));
  }

  /** A kind-acquire reply, or InvalidArgumentError when the semaphore is in use with other permits. */
  private checked(request: AcquireRequest, reply: [number, number]): [number, number] {
    const kind = request.kind;
    if (reply[0] === -1 && kind?.type === 'permit') {
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
      // The fair mutex's waiter (fair-waiter.ts): its re-check is kind-acquire here, and it re-checks
      // after the first holder's lease end (a crash needs no event) or at the deadline.
      const waiter = new QueuedWaiter(this.host, request, keysOf(request.key, token), token, sentAt, deadline, resolve, reject);
      this.waiters.set(token, waiter);
      const early = this.inFlight.get(token);
      this.inFlight.delete(token);
      if (signal.aborted || this.closed) return waiter.cancel();
      // Many waiters share one signal (the client's close): one listener on it, O(1) per waiter.
      waiter.listen(signal);
      this.startTicking();
      waiter.stillWaiting(retryMs, sentAt);
      // A grant message that beat the queueing script's reply: take it now.
      if (early !== undefined) this.onGrantMessage(token, early);
      const ready = this.grants.ready(this.channelPrefix(request.key) + this.clientId);
      // Queued before our subscription was live: a grant may already have been sent unheard.
      if (ready !== true) void ready.then(() => waiter.recheckNow());
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
    if (waiter === undefined) {
      if (this.inFlight.has(token)) this.inFlight.set(token, fence);
      return;
    }
    if (waiter.done) return;
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
    this.run(this.renewCall(request.key, token, request.ttlMs)).then(
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
    const calls: ScriptCall[] = [
      ...waiters.map((waiter) => this.acquireCall(waiter.request, waiter.token, '1', false)),
      ...grants.map((grant) => this.renewCall(grant.key, grant.token, grant.ttlMs)),
    ];
    try {
      const replies = await pipelined(
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

/** Requests in the global (slot, key) order, cut into runs of one hash slot (one script each). */
function slotGroups(requests: readonly AcquireRequest[]): AcquireRequest[][] {
  const groups: AcquireRequest[][] = [];
  let slot = -1;
  for (const request of requests) {
    const next = slotOf(request.key);
    if (next !== slot || groups.length === 0) groups.push([]);
    groups.at(-1)!.push(request);
    slot = next;
  }
  return groups;
}

function kindOf(request: AcquireRequest): LockKind {
  if (request.kind === undefined) throw new Error('unreachable: a mutex request reached the read-write / semaphore scripts');
  return request.kind;
}
