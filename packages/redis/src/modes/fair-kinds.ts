import {
  InvalidArgumentError,
  leaseValidUntil,
  type AcquireRequest,
  type CampaignRequest,
  type Grant,
  type LockKind,
  type TermGrant,
} from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { siblingKey, slotOf } from '../keys.js';
import { pipelined } from '../pipeline.js';
import { queueScript, runScript, type ScriptArgument } from '../lua.js';
import { FairQueue, fairKeys, type FairSettings, type QueueGrant, type QueueScript } from './fair-queue.js';
import type { LockMode } from './mode.js';

/**
 * One letter per kind, read by the scripts from the token (lua/kinds.ts). Tokens of the mutex
 * family go through the fair mutex's own scripts: 'm' a key of a multi-lock, 'e' an election term.
 */
const modeLetter = { read: 'r', write: 'w', permit: 'p' } as const;
const letterOf = (token: string): string => token.charAt(token.lastIndexOf('.') + 1);
const isKindToken = (token: string): boolean => 'rwp'.includes(letterOf(token));

/** An election token carries the candidate's id (base64url: no '.', no space), so the lock's value names its leader. */
const electionToken = /^[^.]+\.\d+\.e[0-9a-z]+~([A-Za-z0-9_-]*)$/;

/**
 * The five keys of a read-write lock or a semaphore on `key`, in one hash slot (lua/kinds.ts). They
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

/**
 * Read-write locks and semaphores of the fair mode (issue 16): holders with server-clock leases,
 * FIFO across modes with runs of readers admitted together, room granted in place to the head by
 * the script that frees it, one message to that waiter's client (lua/kinds.ts). The waiting side
 * is the fair mutex's (fair-queue.ts), with these tokens' scripts. It has its own client id, grant
 * channel and subscriber socket, so the fair mutex's hot path is untouched. Multi-locks and
 * election terms (issue 17) are fair mutex locks taken through the same waiting machinery with
 * their own tokens ('m', 'e'), so they too are granted in place and heard on this channel.
 */
export class FairKinds extends FairQueue implements LockMode {
  constructor(
    connection: Redis | Cluster,
    settings: FairSettings,
    private readonly backendName: string,
  ) {
    super(connection, settings);
  }

  /** Whether a grant is one of ours (a read, write or permit), by its token. */
  owns(grant: Grant): boolean {
    return grant.token.startsWith(this.tokenStart);
  }

  /**
   * A read, write or permit hold: its holder entry and lease end on the server's clock (a read-only
   * script); a multi-lock key or a term: the fair mutex's plain token.
   */
  override validate(grant: Grant): Promise<boolean> {
    if (!isKindToken(grant.token)) return super.validate(grant);
    return runScript(this.connection, 'kind-holds', keysOf(grant.key, grant.token).slice(0, 2), [grant.token]).then(
      (reply) => Number(reply) === 1,
    );
  }

  tokenFor(request: AcquireRequest): string {
    return this.newToken(request.ttlMs, modeLetter[kindOf(request).type]);
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
   * one script takes every free key and queues on every other (lua/fair.ts), so two
   * multi-locks stand in the same order in every queue they share; then the call waits for the
   * grants of that slot before it enqueues in the next. At the deadline, on abort or on a failure,
   * every key taken is released and every queue entry left: nothing stays behind.
   */
  async acquireMany(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<Grant[] | undefined> {
    const taken: QueueGrant[] = [];
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
  ): Promise<{ grants: QueueGrant[]; waited: boolean } | undefined> {
    const tokens = group.map((request) => this.newToken(request.ttlMs, 'm'));
    for (const token of tokens) this.queue.expect(token);
    const prefix = this.channelPrefix(group[0]!.key);
    const sentAt = Date.now();
    const reply = (await runScript(
      this.connection,
      'fair-enqueue-many',
      group.flatMap((request) => fairKeys(request.key)),
      [this.settings.waiterLeaseMs, prefix, this.publish, ...tokens],
    ).catch((error: unknown) => {
      for (const token of tokens) this.queue.unexpect(token);
      for (const [index, request] of group.entries()) void this.undoAcquire(request, tokens[index]!).catch(() => undefined);
      throw error;
    })) as unknown[];
    const grants: QueueGrant[] = [];
    const waits: Promise<Grant | undefined>[] = [];
    const giveUp = new AbortController();
    const waitSignal = AbortSignal.any([signal, giveUp.signal]);
    for (const [index, request] of group.entries()) {
      const [held, value] = [Number(reply[2 * index]), Number(reply[2 * index + 1])];
      if (held === 1) {
        this.queue.unexpect(tokens[index]!);
        grants.push(this.grantOf(request, tokens[index]!, value, leaseValidUntil(sentAt, request.ttlMs)));
      } else {
        waits.push(this.queue.wait(request, tokens[index]!, sentAt, value >= 0 ? value : null, deadline, waitSignal));
      }
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
    for (const outcome of outcomes) if (outcome.status === 'fulfilled' && outcome.value) grants.push(outcome.value as QueueGrant);
    const failure = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (failure === undefined && grants.length === group.length) return { grants, waited: true };
    await Promise.allSettled(grants.map((grant) => this.release(grant)));
    if (failure) throw failure.reason;
    return undefined;
  }

  /** Re-checks every key in one pipeline (extending each still ours to its ttl); false if one is gone. */
  private async confirmAll(grants: readonly QueueGrant[]): Promise<boolean> {
    const sentAt = Date.now();
    const replies = await pipelined(
      this.connection,
      grants.map((grant) => grant.key),
      (pipeline, index) => queueScript(pipeline, 'compare-pexpire', [grants[index]!.key], [grants[index]!.token, grants[index]!.ttlMs]),
    );
    for (const [index, grant] of grants.entries()) {
      if (Number(replies[index]) !== 1) return false;
      grant.validUntil = leaseValidUntil(sentAt, grant.ttlMs);
      this.queue.extended(grant, sentAt, grant.ttlMs);
    }
    return true;
  }

  // ---- the scripts of a token: kinds (r, w, p) have their own, the mutex family (m, e) the fair mutex's

  protected acquireCall(request: AcquireRequest, token: string, join: '0' | '1', downgrade = true): QueueScript {
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
    // a plain read or write sends four arguments, as the fair mutex (lua/kinds.ts).
    if (this.settings.cluster) args.push(...channel);
    else while (args.at(-1) === '') args.pop();
    return { name: 'kind-acquire', keys: keysOf(request.key, token), args };
  }

  /** A heartbeat re-queues without the downgrade: the writer's hold it named may be gone by now. */
  protected override heartbeatCall(request: AcquireRequest, token: string): QueueScript {
    return this.acquireCall(request, token, '1', false);
  }

  protected leaveCall(key: string, token: string): QueueScript {
    const args = [token, this.channelPrefix(key), this.publish];
    return isKindToken(token) ? { name: 'kind-leave', keys: keysOf(key, token), args } : { name: 'fair-leave', keys: fairKeys(key), args };
  }

  protected releaseCall(key: string, token: string): QueueScript {
    // The channel only on Cluster: a single server's is the release script's default.
    const args = this.settings.cluster ? [token, this.channelPrefix(key), this.publish] : [token];
    return isKindToken(token)
      ? { name: 'kind-release', keys: keysOf(key, token), args }
      : { name: 'fair-release', keys: fairKeys(key), args };
  }

  protected renewCall(key: string, token: string, ttlMs: number): QueueScript {
    return isKindToken(token)
      ? { name: 'kind-renew', keys: keysOf(key, token), args: [token, ttlMs] }
      : { name: 'compare-pexpire', keys: [key], args: [token, ttlMs] };
  }

  /** A kind-acquire reply, or InvalidArgumentError when the semaphore is in use with other permits. */
  protected override checked(request: AcquireRequest, reply: [number, number]): [number, number] {
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
