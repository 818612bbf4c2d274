import { randomBytes } from 'node:crypto';
import { guardCall, inspectSafely, type AcquireRequest, type AttemptResult, type Capabilities, type Grant, type LockBackend } from '@deadbolt/core/adapter';
import memjs from 'memjs';
import { expirySeconds } from './expiry.js';
import { encodeKey } from './keys.js';
import type { ResolvedMemcachedOptions } from './options.js';
import { add, deleteIfCas, getWithCas, setIfCas } from './protocol.js';

/**
 * What memcached can promise:
 * - AP: no replication; memjs shards keys across servers, and a server that restarts, is evicted
 *   from or dies loses the locks it held (the holder's next renew says so).
 * - No fencing: memcached has no durable per-key counter. An INCR counter lives in the same cache
 *   and can be evicted or lost on restart, after which it would start again at 0 and tokens would
 *   go backwards: worse than no fencing at all.
 * - No notifications: core polls with capped exponential backoff and jitter.
 * - Expiry is in whole seconds on the server's clock: minTtlMs 1000, leases rounded up.
 * - Keys: any key core accepts works (spaces, unicode, long keys), see keys.ts; 4096 bytes is the
 *   same bound as the memory backend, well past memcached's own 250 (long keys are hashed).
 */
export const memcachedCapabilities: Capabilities = Object.freeze({
  consistency: 'AP',
  fencing: false,
  reentrant: 'client',
  notifications: false,
  lease: 'ttl',
  clock: 'server',
  minTtlMs: 1000,
  maxKeyBytes: 4096,
});

export class MemcachedBackend implements LockBackend {
  readonly name = 'memcached';
  readonly capabilities = memcachedCapabilities;
  readonly defaultPrefix = 'deadbolt:';

  readonly #options: ResolvedMemcachedOptions;
  #client: memjs.Client | undefined;
  readonly #ownsClient: boolean;
  /** Aborted by close(): operations still waiting on a frozen server give up at once. */
  readonly #closed = new AbortController();

  constructor(options: ResolvedMemcachedOptions) {
    this.#options = options;
    this.#client = options.client;
    this.#ownsClient = options.client === undefined;
  }

  /** Connects lazily: the factory must not do I/O. */
  #connection(): memjs.Client {
    if (this.#client === undefined) {
      const seconds = this.#options.timeoutMs / 1000;
      this.#client = memjs.Client.create(this.#options.servers.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`).join(','), {
        // One attempt per operation: a retried ADD whose first answer was lost would report
        // "exists" for our own lock; core's waiting loop is the retry policy.
        retries: 1,
        // Failover would move a dead server's keys to another server, which could grant them again
        // while the first still holds them.
        failover: false,
        timeout: seconds,
        conntimeout: seconds,
        keepAlive: true,
        logger: { log: () => undefined },
      });
    }
    return this.#client;
  }

  /** One operation's deadline; core's wait bound is waitMs + this. */
  get callTimeoutMs(): number {
    return this.#options.timeoutMs;
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const token = randomBytes(16).toString('base64url');
    const key = encodeKey(request.key);
    const grant: Grant = { key: request.key, owner: request.owner, token };
    // An ADD whose answer never came (a frozen server runs it when it wakes) is undone by its token,
    // so it cannot leave a lease nobody holds for the whole ttl (issue 14).
    const stored = await this.#run('acquire', request.key, () => add(this.#connection(), key, token, expirySeconds(request.ttlMs)), (late) => {
      if (late !== false) return this.release(grant);
    });
    if (!stored) return { acquired: false };
    return { acquired: true, grant };
  }

  /** GET the value with its CAS; if it is our token, SET it again with the new expiry, guarded by that CAS. */
  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const key = encodeKey(grant.key);
    return this.#run('renew', grant.key, async () => {
      const client = this.#connection();
      const current = await getWithCas(client, key);
      if (current === undefined || current.value.toString('utf8') !== grant.token) return false;
      return setIfCas(client, key, grant.token, expirySeconds(ttlMs), current.cas);
    });
  }

  /** GET the value with its CAS; if it is our token, DELETE guarded by that CAS (a new owner's ADD changes the CAS). */
  async release(grant: Grant): Promise<boolean> {
    const key = encodeKey(grant.key);
    return this.#run('release', grant.key, async () => {
      const client = this.#connection();
      const current = await getWithCas(client, key);
      if (current === undefined || current.value.toString('utf8') !== grant.token) return false;
      return deleteIfCas(client, key, current.cas);
    });
  }

  async close(): Promise<void> {
    this.#closed.abort(new Error('the backend is closed'));
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined && this.#ownsClient) closeHard(client);
  }

  #run<T>(action: string, key: string, operation: () => Promise<T>, undo?: (late: T | undefined) => Promise<unknown> | undefined): Promise<T> {
    return guardCall(operation, { action, key, backend: this.name, timeoutMs: this.#options.timeoutMs, signal: this.#closed.signal, undo });
  }
}

/** memjs's close() only half-closes (socket.end()); destroy so no socket outlives close(). */
function closeHard(client: memjs.Client): void {
  for (const server of (client as unknown as { servers: { _socket?: { destroy(): void }; connected?: boolean }[] }).servers) {
    server._socket?.destroy();
  }
  client.close();
}

inspectSafely(MemcachedBackend, (backend) => ({ name: backend.name }));
