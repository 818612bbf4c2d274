import type { AcquireRequest, AttemptResult, Capabilities, Grant } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { fenceKey, releaseChannel, waitingKey } from '../keys.js';
import { pipelined } from '../pipeline.js';
import { acknowledgedGrant, type ReplicaWait } from '../replica-ack.js';
import { pair, queueScript, runScript } from '../lua.js';
import { serverExpiryMs, renewalExpiryMs, withLockDelay } from './lock-delay.js';
import { baseCapabilities, type LockMode } from './mode.js';

export const hashReentrantCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  fencing: true,
  reentrant: 'server',
  notifications: true,
  clock: 'server',
  // The hash's PEXPIRE is ttl + lockDelayMs (every hold and renewal); the last release deletes it.
  lockDelay: true,
});

/**
 * Redisson's reentrant lock (seed 001): a hash per lock, field = owner id, value = hold count. The
 * server counts re-entries, so core calls tryAcquire again for each nested hold and release once per
 * hold; the last release deletes the hash and publishes on the lock's channel. The grant's token is
 * the owner id: that is what the server compares.
 */
export class HashReentrantMode implements LockMode {
  readonly mode = 'hash-reentrant' as const;
  readonly capabilities = hashReentrantCapabilities;
  readonly publishesReleases = true;

  /** `replicaWait`: every hold and renewal waits for that many replicas (WAIT in the same round trip). */
  constructor(
    private readonly connection: Redis | Cluster,
    private readonly replicaWait?: ReplicaWait,
  ) {}

  async tryAcquire(request: AcquireRequest, attempt = ''): Promise<AttemptResult> {
    const keys = [request.key, fenceKey(request.key)];
    const args = [serverExpiryMs(request), request.owner, attempt];
    const [acquired, value] = pair(
      this.replicaWait === undefined
        ? await runScript(this.connection, 'hash-acquire', keys, args)
        : await acknowledgedGrant(
            this.connection,
            this.replicaWait,
            (pipeline) => queueScript(pipeline, 'hash-acquire', keys, args),
            (reply) => pair(reply)[0] === 1,
            // Takes back exactly the hold this attempt added (a re-entry's too), as a lost answer's undo does.
            () => this.undoAcquire(request, attempt),
            { action: 'acquire', key: request.key, backend: 'redis:hash-reentrant' },
          ),
    );
    if (acquired !== 1) return { acquired: false, retryAfterMs: Math.max(0, value) };
    return {
      acquired: true,
      grant: withLockDelay({ key: request.key, owner: request.owner, token: request.owner, fence: value }, request),
    };
  }

  /**
   * The hold count is per owner, not per attempt, so an undo must not take back a hold this attempt
   * did not add: hash-undo drops one hold only while the hash still names this attempt as the last one.
   */
  undoAcquire(request: AcquireRequest, attempt: string): Promise<unknown> {
    return runScript(
      this.connection,
      'hash-undo',
      [request.key, waitingKey(request.key)],
      [request.owner, attempt, releaseChannel(request.key)],
    );
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    if (this.replicaWait !== undefined) return (await this.renewMany([grant], [ttlMs]))[0]!;
    return Number(await runScript(this.connection, 'hash-renew', [grant.key], [grant.token, renewalExpiryMs(grant, ttlMs)])) === 1;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]> {
    const replies = await pipelined(
      this.connection,
      grants.map((grant) => grant.key),
      (pipeline, index) =>
        queueScript(pipeline, 'hash-renew', [grants[index]!.key], [grants[index]!.token, renewalExpiryMs(grants[index]!, ttlMs[index]!)]),
      this.replicaWait,
    );
    return replies.map((reply) => Number(reply) === 1);
  }

  async release(grant: Grant): Promise<boolean> {
    return (
      Number(
        await runScript(this.connection, 'hash-release', [grant.key, waitingKey(grant.key)], [grant.token, releaseChannel(grant.key)]),
      ) > 0
    );
  }

  /** The owner's field in the hash (the server's PEXPIRE ends it). */
  async validate(grant: Grant): Promise<boolean> {
    return Number(await this.connection.hexists(grant.key, grant.token)) === 1;
  }

  async close(): Promise<void> {}
}
