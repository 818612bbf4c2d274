import type { AcquireRequest, AttemptResult, Capabilities, Grant } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { fenceKey, releaseChannel, waitingKey } from '../keys.js';
import { pipelined } from '../pipeline.js';
import { acknowledgedGrant, type ReplicaWait } from '../replica-ack.js';
import { pair, queueScript, runScript } from '../lua.js';
import { TokenSource } from '../token.js';
import { serverExpiryMs, renewalExpiryMs, withLockDelay } from './lock-delay.js';
import { baseCapabilities, type LockMode } from './mode.js';

export const setnxCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  fencing: true,
  reentrant: 'client',
  notifications: true,
  clock: 'server',
  // One script takes every key of a slot (multi.ts); elections on the lock (election.ts).
  multi: 'atomic',
  election: true,
  // The key's PX is ttl + lockDelayMs (grant and every renewal); a release deletes it (lock-delay.ts).
  lockDelay: true,
});

/**
 * The standard single-instance Redis lock (seeds 000, 002, 004; the Redis docs' "Distributed locks"
 * page): the value under the key is a plain random token set with SET NX PX, so any other client of
 * the same protocol (redis-py's Lock, node-redlock with one node) excludes us on the same key.
 * Release is compare-and-delete, renew compare-and-pexpire, both in Lua.
 */
export class SetnxMode implements LockMode {
  readonly mode = 'setnx' as const;
  readonly capabilities: Capabilities;
  readonly publishesReleases = true;

  private readonly tokens = new TokenSource();

  /** `replicaWait`: every grant and renewal waits for that many replicas (WAIT in the same round trip). */
  constructor(
    private readonly connection: Redis | Cluster,
    private readonly replicaWait?: ReplicaWait,
  ) {
    // acquireAll's one script per slot does not wait for replicas: core takes the keys one by one.
    this.capabilities = replicaWait === undefined ? setnxCapabilities : Object.freeze({ ...setnxCapabilities, multi: 'ordered' as const });
  }

  async tryAcquire(request: AcquireRequest, token = this.tokens.next()): Promise<AttemptResult> {
    const keys = [request.key, fenceKey(request.key)];
    const [acquired, value] = pair(
      this.replicaWait === undefined
        ? await runScript(this.connection, 'setnx-acquire', keys, [token, serverExpiryMs(request)])
        : await acknowledgedGrant(
            this.connection,
            this.replicaWait,
            (pipeline) => queueScript(pipeline, 'setnx-acquire', keys, [token, serverExpiryMs(request)]),
            (reply) => pair(reply)[0] === 1,
            () => this.undoAcquire(request, token),
            { action: 'acquire', key: request.key, backend: 'redis:setnx' },
          ),
    );
    if (acquired !== 1) return { acquired: false, retryAfterMs: Math.max(0, value) };
    return { acquired: true, grant: withLockDelay({ key: request.key, owner: request.owner, token, fence: value }, request) };
  }

  undoAcquire(request: AcquireRequest, token: string): Promise<unknown> {
    return runScript(this.connection, 'setnx-release', [request.key, waitingKey(request.key)], [token, releaseChannel(request.key)]);
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    if (this.replicaWait !== undefined) return (await this.renewMany([grant], [ttlMs]))[0]!;
    return Number(await runScript(this.connection, 'compare-pexpire', [grant.key], [grant.token, renewalExpiryMs(grant, ttlMs)])) === 1;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]> {
    const replies = await pipelined(
      this.connection,
      grants.map((grant) => grant.key),
      (pipeline, index) =>
        queueScript(
          pipeline,
          'compare-pexpire',
          [grants[index]!.key],
          [grants[index]!.token, renewalExpiryMs(grants[index]!, ttlMs[index]!)],
        ),
      this.replicaWait,
    );
    return replies.map((reply) => Number(reply) === 1);
  }

  async release(grant: Grant): Promise<boolean> {
    return (
      Number(
        await runScript(this.connection, 'setnx-release', [grant.key, waitingKey(grant.key)], [grant.token, releaseChannel(grant.key)]),
      ) === 1
    );
  }

  /** The token under the key (the server's PX ends it). */
  async validate(grant: Grant): Promise<boolean> {
    return (await this.connection.get(grant.key)) === grant.token;
  }

  async close(): Promise<void> {}
}
