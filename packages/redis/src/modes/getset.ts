import type { AcquireRequest, AttemptResult, Capabilities, Grant } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { pipelined } from '../pipeline.js';
import { pair, queueScript, runScript } from '../lua.js';
import { randomToken } from '../token.js';
import { baseCapabilities, type LockMode } from './mode.js';

export const getsetCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  fencing: false,
  reentrant: 'client',
  notifications: false,
  clock: 'client',
});

/**
 * The key is kept by the server this long past the stored expiry, only so that abandoned locks do not
 * stay forever; expiry itself is decided by the clients' clocks, as the algorithm prescribes.
 */
function garbageTtlMs(ttlMs: number): number {
  return 2 * ttlMs + 60_000;
}

/**
 * The legacy SETNX + GETSET lock (seed 003) for servers without SET NX PX. Its weakness is kept on
 * purpose and declared (capabilities.clock = 'client'): a client whose clock runs ahead judges a live
 * lock expired and takes it over. The owner token stored beside the expiry means a release or renew
 * never removes another owner's lock, which the seed's "DEL if not yet expired" cannot promise.
 */
export class GetsetMode implements LockMode {
  readonly mode = 'getset' as const;
  readonly capabilities = getsetCapabilities;
  readonly publishesReleases = false;

  constructor(
    private readonly connection: Redis | Cluster,
    private readonly now: () => number,
  ) {}

  async tryAcquire(request: AcquireRequest, token = randomToken()): Promise<AttemptResult> {
    const now = Math.floor(this.now());
    const value = `${now + request.ttlMs}:${token}`;
    const [acquired, remainingMs] = pair(
      await runScript(this.connection, 'getset-acquire', [request.key], [value, now, garbageTtlMs(request.ttlMs)]),
    );
    if (acquired !== 1) return { acquired: false, retryAfterMs: Math.max(0, remainingMs) };
    return { acquired: true, grant: { key: request.key, owner: request.owner, token } };
  }

  /** Deletes only a value holding this attempt's token (getset-release compares it). */
  undoAcquire(request: AcquireRequest, token: string): Promise<unknown> {
    return runScript(this.connection, 'getset-release', [request.key], [token, Math.floor(this.now())]);
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const now = Math.floor(this.now());
    const reply = await runScript(
      this.connection,
      'getset-renew',
      [grant.key],
      [grant.token, now, `${now + ttlMs}:${grant.token}`, garbageTtlMs(ttlMs)],
    );
    return Number(reply) === 1;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]> {
    const now = Math.floor(this.now());
    const replies = await pipelined(
      this.connection,
      grants.map((grant) => grant.key),
      (pipeline, index) => {
        const grant = grants[index]!;
        const ttl = ttlMs[index]!;
        queueScript(pipeline, 'getset-renew', [grant.key], [grant.token, now, `${now + ttl}:${grant.token}`, garbageTtlMs(ttl)]);
      },
    );
    return replies.map((reply) => Number(reply) === 1);
  }

  async release(grant: Grant): Promise<boolean> {
    return Number(await runScript(this.connection, 'getset-release', [grant.key], [grant.token, Math.floor(this.now())])) === 1;
  }

  /** "expiry:token", the expiry on the client's clock as the algorithm decides it. */
  async validate(grant: Grant): Promise<boolean> {
    const value = await this.connection.get(grant.key);
    if (value === null) return false;
    const colon = value.indexOf(':');
    return value.slice(colon + 1) === grant.token && Number(value.slice(0, colon)) > this.now();
  }

  async close(): Promise<void> {}
}
