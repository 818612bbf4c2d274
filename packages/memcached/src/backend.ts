import { randomBytes } from 'node:crypto';
import {
  closedError,
  DeadlineWheel,
  endpointOf,
  guardCall,
  inspectSafely,
  type AcquireRequest,
  type AttemptResult,
  type Capabilities,
  type Grant,
  type KindsDriver,
  type LockBackend,
  type RunsDriver,
} from '@deadbolt/core/adapter';
import memjs from 'memjs';
import { closeHard, dropSilentSockets, trackSockets } from './memjs-sockets.js';
import { expirySeconds } from './expiry.js';
import { encodeKey } from './keys.js';
import { SemaphoreDriver } from './kinds-driver.js';
import type { SlotGrant } from './semaphore-slots.js';
import type { ResolvedMemcachedOptions } from './options.js';
import { checkPermits } from './permits-record.js';
import { KeyPoller } from './poller.js';
import { MemcachedOperations } from './operations.js';
import { runRecordsOn } from './run-records.js';
import { addReturningCas, deleteIfCas, getWithCas, getWithFlags, setIfCasReturning, type Cas } from './protocol.js';
import { holdsToken } from './validate.js';

/**
 * What memcached can promise:
 * - AP: no replication; memjs shards keys across servers, and a server that restarts, is evicted
 *   from or dies loses the locks it held (the holder's next renew says so).
 * - No fencing: memcached has no durable per-key counter. An INCR counter lives in the same cache
 *   and can be evicted or lost on restart, after which it would start again at 0 and tokens would
 *   go backwards: worse than no fencing at all.
 * - No notifications: waiters poll, one poller per key per client, FIFO among local waiters, with a
 *   backoff that adapts to the holder's remaining lease (poller.ts).
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
  // N slot keys (semaphore-slots.ts): AP and unfair. No read-write lock: readers would need
  // per-holder leases in one CAS-updated value with client-clock expiries (research notes, §2.3).
  semaphore: true,
  // The item's expiry is ttl + lockDelayMs, rounded up like every lease (grant and renewal).
  lockDelay: true,
  // operations.ts: the items of a key can be read and deleted, but memcached cannot enumerate keys (no list).
  operations: Object.freeze(['inspect', 'forceRelease'] as const),
});

export class MemcachedBackend implements LockBackend {
  readonly name = 'memcached';
  readonly capabilities = memcachedCapabilities;
  readonly defaultPrefix = 'deadbolt:';
  /** The servers, for error messages. */
  readonly endpoint: string;
  /** Every call is bounded by #run's deadline (timeoutMs): core adds no safety-net timer of its own per call. */
  readonly boundsCalls = true;

  readonly #options: ResolvedMemcachedOptions;
  #client: memjs.Client | undefined;
  readonly #ownsClient: boolean;
  /** Aborted by close(): operations still waiting on a frozen server give up at once. */
  readonly #closed = new AbortController();
  /** The calls' deadlines on one timer (deadline-wheel.ts), not a Node timer armed and cleared per call; stopped by close(). */
  readonly #deadlines = new DeadlineWheel();
  /**
   * The CAS of each grant's item as last stored by us (ADD, renewing SET). Release and renew send it
   * with the request, so compare-and-delete / compare-and-extend take one round trip; a mismatch (an
   * answer we have not seen yet, a restart) falls back to GET + compare the token + CAS-guarded write.
   */
  readonly #cas = new Map<string, Cas>();
  #corked = false;
  /** Sockets corked for this tick, and the one callback that uncorks them (no closure per request). */
  #corkedSockets: CorkableSocket[] = [];
  readonly #uncork = (): void => {
    this.#corked = false;
    for (const socket of this.#corkedSockets) socket.uncork();
    this.#corkedSockets = [];
  };
  /**
   * Tokens: a random prefix per backend (96 bits, so no two clients share one) and a counter, unique
   * per grant like a fresh random token but without a call into the CSPRNG per attempt (it was a
   * tenth of the adapter's time per uncontended cycle). A token only has to be unique: it is compared,
   * never trusted as a secret (any client of the cache can delete any key).
   */
  readonly #tokenPrefix = randomBytes(12).toString('base64url');
  #tokenCount = 0;
  readonly #poller = new KeyPoller({
    attempt: (request) => this.#attempt(request),
    holderRemainingMs: (key) => this.#holderRemainingMs(key),
    release: (grant) => this.release(grant),
  });

  /** Semaphores (kinds-driver.ts): slot items, through the same guarded item operations as the mutex. */
  readonly kinds: KindsDriver = new SemaphoreDriver({
    add: (request, slotKey) => this.#attempt(request, slotKey),
    checkPermits: (request, permits) => this.#checkPermits(request, permits),
    renew: (grant, storedKey, ttlMs) => this.#renew(grant, storedKey, ttlMs),
    renewMany: (grants, storedKeys, ttlMs) => this.#renewMany(grants, storedKeys, ttlMs),
    release: (grant, storedKey) => this.#release(grant, storedKey),
    validate: (grant, storedKey) => this.#run('validate', grant.key, () => holdsToken(this.#connection(), storedKey, grant.token)),
  });

  /** Run-once records beside the job's lock (run-records.ts); claims are the mutex's. */
  readonly runs: RunsDriver;
  /** inspect and forceRelease over the key's hold items (operations.ts); no list. */
  readonly operations: MemcachedOperations;

  constructor(options: ResolvedMemcachedOptions) {
    this.#options = options;
    this.endpoint = endpointOf(options.servers);
    this.#client = options.client;
    this.#ownsClient = options.client === undefined;
    this.runs = runRecordsOn(this.#connection.bind(this), this.#run.bind(this));
    this.operations = new MemcachedOperations(this.#connection.bind(this), this.#run.bind(this));
  }

  /** Connects lazily: the factory must not do I/O. */
  #connection(): memjs.Client {
    if (this.#client === undefined) {
      const seconds = this.#options.timeoutMs / 1000;
      this.#client = memjs.Client.create(
        this.#options.servers.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`).join(','),
        {
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
        },
      );
      trackSockets(this.#client);
    }
    return this.#client;
  }

  /** One operation's deadline; core's wait bound is waitMs + this. */
  get callTimeoutMs(): number {
    return this.#options.timeoutMs;
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    // Local waiters queue for this key: a new attempt goes behind them (FIFO), not around them.
    if (this.#poller.busy(request.key)) return { acquired: false };
    return this.#attempt(request);
  }

  /** Native waiting: the key's one poller (poller.ts), which makes the first attempt and reports contention. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.#poller.wait(request, deadline, signal);
  }

  /** A semaphore's permits against its record (permits-record.ts): InvalidArgumentError on a mismatch. */
  #checkPermits(request: AcquireRequest, permits: number): Promise<void> {
    return this.#run('acquire', request.key, () => checkPermits(this.#connection(), request.key, permits, request.ttlMs, this.name));
  }

  /** One ADD of `storedKey`: the lock's own key, or one of a semaphore's slot keys. */
  async #attempt(request: AcquireRequest, storedKey: string = request.key): Promise<AttemptResult> {
    this.#tokenCount += 1;
    const token = `${this.#tokenPrefix}${this.#tokenCount.toString(36)}`;
    const key = encodeKey(storedKey);
    const slot: SlotGrant | undefined =
      storedKey === request.key ? undefined : { key: request.key, owner: request.owner, token, slotKey: storedKey };
    // Lock-delay: the item outlives the holder's lease by the delay; only a release deletes it sooner.
    const lockDelayMs = request.lockDelayMs ?? 0;
    const grant: Grant = slot ?? { key: request.key, owner: request.owner, token, ...(lockDelayMs > 0 ? { lockDelayMs } : {}) };
    const itemMs = request.ttlMs + lockDelayMs;
    // An ADD whose answer never came (a frozen server runs it when it wakes) is undone by its token
    // (release without a known CAS compares the token), so it cannot leave a lease nobody holds.
    // The kit's guard retries the undo until the server answers, within the lease's ttl.
    const cas = await this.#run(
      'acquire',
      request.key,
      () => addReturningCas(this.#connection(), key, token, expirySeconds(itemMs), leaseEndFlags(itemMs)),
      () => this.#release(grant, storedKey),
      request.ttlMs,
    );
    if (cas === undefined) return { acquired: false };
    this.#cas.set(token, cas);
    return { acquired: true, grant };
  }

  /** SET guarded by the grant's CAS with the new expiry: compare-and-extend in one round trip. */
  renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return this.#renew(grant, grant.key, ttlMs);
  }

  /** renew() of the item `storedKey` (the lock's key, or a permit's slot). */
  #renew(grant: Grant, storedKey: string, ttlMs: number): Promise<boolean> {
    return this.#run('renew', grant.key, () => this.#renewOnce(grant, storedKey, ttlMs));
  }

  async #renewOnce(grant: Grant, storedKey: string, ttlMs: number): Promise<boolean> {
    const key = encodeKey(storedKey);
    const itemMs = ttlMs + (grant.lockDelayMs ?? 0);
    {
      const client = this.#connection();
      const flags = leaseEndFlags(itemMs);
      const known = this.#cas.get(grant.token);
      let cas = known === undefined ? undefined : await setIfCasReturning(client, key, grant.token, expirySeconds(itemMs), known, flags);
      if (cas === undefined) {
        const current = await getWithCas(client, key);
        if (current === undefined || current.value.toString('utf8') !== grant.token) return false;
        cas = await setIfCasReturning(client, key, grant.token, expirySeconds(itemMs), current.cas, flags);
      }
      if (cas === undefined) return false;
      if (this.#cas.has(grant.token)) this.#cas.set(grant.token, cas);
      return true;
    }
  }

  /**
   * Every renewal of a tick at once: pipelined on each server's socket and corked into one write
   * (see #corkThisTick): one round trip per server per tick, not one per lock.
   */
  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    return this.#renewMany(
      grants,
      grants.map((grant) => grant.key),
      ttlMs,
    );
  }

  async #renewMany(grants: readonly Grant[], storedKeys: readonly string[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    // One guard (one timer) for the batch: 10,000 guarded calls cost more client time than the I/O.
    const results = await this.#run('renew', grants.length === 1 ? grants[0]!.key : '(batch)', () =>
      Promise.all(
        grants.map((grant, index) =>
          this.#renewOnce(grant, storedKeys[index]!, ttlMs[index]!).catch((error: unknown) =>
            error instanceof Error ? error : new Error(String(error)),
          ),
        ),
      ),
    );
    const failed = results.find((result): result is Error => result instanceof Error);
    if (failed !== undefined && results.every((result) => result instanceof Error)) throw failed;
    return results.map((result) => result === true);
  }

  /** DELETE guarded by the grant's CAS (a new owner's ADD has another CAS): compare-and-delete in one round trip. */
  release(grant: Grant): Promise<boolean> {
    return this.#release(grant, grant.key);
  }

  /** release() of the item `storedKey` (the lock's key, or a permit's slot). */
  async #release(grant: Grant, storedKey: string): Promise<boolean> {
    const key = encodeKey(storedKey);
    const known = this.#cas.get(grant.token);
    this.#cas.delete(grant.token);
    return this.#run('release', grant.key, async () => {
      const client = this.#connection();
      if (known !== undefined && (await deleteIfCas(client, key, known))) return true;
      const current = await getWithCas(client, key);
      if (current === undefined || current.value.toString('utf8') !== grant.token) return false;
      return deleteIfCas(client, key, current.cas);
    });
  }

  validate(grant: Grant): Promise<boolean> {
    return this.#run('validate', grant.key, () => holdsToken(this.#connection(), grant.key, grant.token));
  }

  async #holderRemainingMs(userKey: string): Promise<number | undefined> {
    const current = await this.#run('wait', userKey, () => getWithFlags(this.#connection(), encodeKey(userKey)));
    if (current === undefined || current.flags === 0) return undefined;
    // Wrapping difference of two 32-bit millisecond clocks (the flags hold the end mod 2^32).
    const remaining = (current.flags - (Date.now() % 2 ** 32)) | 0;
    return Math.max(0, remaining);
  }

  /**
   * Corks the open server sockets until the end of this tick, so every request issued in the same
   * synchronous run (a renewal tick, 10 000 releases, a burst of attempts) leaves in one write per
   * server instead of one system call each. memjs writes each request at once and matches answers
   * by opaque, so they are pipelined on one socket. (memjs internals: `servers[]._socket`.)
   */
  #corkThisTick(): void {
    if (this.#corked) return;
    const servers = (this.#client as unknown as { servers?: { _socket?: CorkableSocket }[] } | undefined)?.servers;
    if (servers === undefined) return;
    for (const server of servers) {
      const socket = server._socket;
      if (socket === undefined) continue;
      socket.cork();
      this.#corkedSockets.push(socket);
    }
    if (this.#corkedSockets.length === 0) return;
    this.#corked = true;
    process.nextTick(this.#uncork);
  }

  async close(): Promise<void> {
    // In-flight calls give up with this reason, which the guard types per call as closedError does.
    this.#closed.abort(new Error('the backend is closed'));
    this.#deadlines.stop();
    const client = this.#client;
    this.#client = undefined;
    this.#cas.clear();
    if (client !== undefined && this.#ownsClient) closeHard(client);
  }

  /** A call got no answer in time: its connection may have gone silent (memjs-sockets.ts). */
  readonly #dropSilentConnections = (): void => {
    if (this.#client !== undefined) dropSilentSockets(this.#client);
  };

  #run<T>(
    action: string,
    key: string,
    operation: () => Promise<T>,
    undo?: (late: T | undefined) => Promise<unknown> | undefined,
    undoWithinMs?: number,
  ): Promise<T> {
    if (this.#closed.signal.aborted) return Promise.reject(closedError(action, key, this.name));
    this.#corkThisTick();
    return guardCall(operation, {
      action,
      key,
      backend: this.name,
      endpoint: this.endpoint,
      timeoutMs: this.#options.timeoutMs,
      deadlines: this.#deadlines,
      signal: this.#closed.signal,
      undo,
      undoWithinMs,
      onDeadline: this.#dropSilentConnections,
    });
  }
}

/** A memjs server's socket, as #corkThisTick uses it. */
interface CorkableSocket {
  cork(): void;
  uncork(): void;
}

inspectSafely(MemcachedBackend, (backend) => ({ name: backend.name }));

/**
 * The lease's end on this client's clock, in ms modulo 2^32, stored in the item's 32-bit flags so a
 * waiter in another client can read how long the holder may keep it (as a hint only: clocks differ,
 * and the server's expiry, not this, decides). Never 0, which means "unknown".
 */
function leaseEndFlags(ttlMs: number): number {
  return (Date.now() + ttlMs) % 2 ** 32 || 1;
}
