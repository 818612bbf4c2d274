import { leaseValidUntil, type AcquireRequest, type CampaignRequest, type Grant, type TermGrant } from '@deadbolt/core/adapter';
import { slotOf } from '../keys.js';
import { queueScript, runScript } from '../lua.js';
import { pipelined } from '../pipeline.js';
import { FairQueue, fairKeys, type QueueGrant, type QueueScript } from './fair-queue.js';
import type { LockMode } from './mode.js';

export { fairCapabilities, fairKeys, type FairSettings } from './fair-queue.js';

/** An election token carries the candidate's id (base64url: no '.', no space), so the lock's value names its leader. */
const electionToken = /^[^.]+\.\d+\.e[0-9a-z]+~([A-Za-z0-9_-]*)$/;

/**
 * Fair (FIFO) locks with the hand-off done by the server (primitives.md section 1.3): the lock is
 * a plain token under the exact key (as in setnx, so SET NX clients still exclude it) and waiters
 * queue beside it. Release, expiry and a giving-up waiter GRANT the lock in place to the head
 * waiter inside the same script, then send one message to that waiter's client: a contended
 * hand-off costs one round trip (Redisson's RedissonFairLock notifies the head, which then has to
 * acquire again: two). The waiting side (re-checks, heartbeats, leaving) is fair-queue.ts; tryAcquire
 * never barges past a non-empty queue (the script refuses it). Multi-locks and election terms are
 * fair locks too, taken through the same queue with their own tokens ('m', 'e'), and kept here.
 */
export class FairMode extends FairQueue implements LockMode {
  private readonly keyCache = new Map<string, readonly string[]>();

  /** The token format the fair scripts read ("<clientId>.<ttl>.<n>"). */
  tokenFor(request: AcquireRequest): string {
    return this.newToken(request.ttlMs);
  }

  /**
   * Elections on the fair queue: a term is the fair lock on the election's key, its fence
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
   * Multi-key locks on the fair queue: per hash slot, in the global (slot, key) order,
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

  protected acquireCall(request: AcquireRequest, token: string, join: '0' | '1'): QueueScript {
    const { ttlMs, key } = request;
    const lease = this.settings.waiterLeaseMs;
    // On a single server the script defaults the channel arguments (standaloneGrantPrefix, PUBLISH).
    const args = this.settings.cluster ? [token, ttlMs, lease, join, this.channelPrefix(key), this.publish] : [token, ttlMs, lease, join];
    return { name: 'fair-acquire', keys: this.keysOf(key), args };
  }

  protected releaseCall(key: string, token: string): QueueScript {
    // The channel only on Cluster: a single server's is the release script's default.
    const args = this.settings.cluster ? [token, this.channelPrefix(key), this.publish] : [token];
    return { name: 'fair-release', keys: this.keysOf(key), args };
  }

  protected renewCall(key: string, token: string, ttlMs: number): QueueScript {
    return { name: 'compare-pexpire', keys: [key], args: [token, ttlMs] };
  }

  protected leaveCall(key: string, token: string): QueueScript {
    return { name: 'fair-leave', keys: this.keysOf(key), args: [token, this.channelPrefix(key), this.publish] };
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
}

/** How many keys' script KEYS a fair mode remembers (see keysOf). */
const keyCacheSize = 1_024;

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
