import { randomUUID } from 'node:crypto';
import type { AcquireRequest, AttemptResult, BackendFactory, Capabilities, Grant, LockBackend } from '../backend.js';
import type { ElectionDriver, KindsDriver, MultiDriver, OperationsDriver, RunsDriver } from '../contract/drivers.js';
import type { CampaignRequest, TermGrant } from '../election-backend.js';
import { InvalidArgumentError } from '../errors.js';
import type { MultiAttemptResult } from '../multi-backend.js';
import type { BackendInspection } from '../operations-backend.js';
import { memoryDrivers, type MemoryDrivers } from './drivers.js';
import { MemoryKinds } from './kinds-driver.js';
import { forceReleaseMemory, inspectMemory, listMemoryKeys } from './operations.js';
import { memoryStore, type MemoryStore } from './store.js';

export const memoryCapabilities: Capabilities = Object.freeze({
  consistency: 'CP',
  fencing: true,
  reentrant: 'client',
  notifications: true,
  lease: 'ttl',
  clock: 'server',
  minTtlMs: 1,
  maxKeyBytes: 4096,
  multi: 'atomic',
  election: true,
  readWrite: true,
  semaphore: true,
  lockDelay: true,
  operations: true,
});

/**
 * The embedded default: locks between the async flows and clients of ONE process. Each operation
 * is synchronous on the event loop, hence atomic. It is the reference the conformance suite is
 * proven on before any server adapter.
 *
 * The object is the mutex's driver: it has no native `acquire`, so core waits with tryAcquire +
 * waitForChange (woken one waiter per release). Read, write and permit holds are the kinds
 * driver's (kinds-driver.ts, the store's FIFO queue); election, multi, operations and runs are
 * views over this object's methods (drivers.ts).
 */
export class MemoryBackend implements LockBackend {
  readonly capabilities = memoryCapabilities;
  readonly kinds: KindsDriver;
  private closed = false;
  private views: MemoryDrivers | undefined;

  constructor(
    readonly store: MemoryStore,
    readonly name = 'memory',
  ) {
    this.kinds = new MemoryKinds(store, () => this.touch());
  }

  get multi(): MultiDriver | undefined {
    return this.drivers().multi;
  }

  get election(): ElectionDriver | undefined {
    return this.drivers().election;
  }

  get operations(): OperationsDriver | undefined {
    return this.drivers().operations;
  }

  get runs(): RunsDriver | undefined {
    return this.drivers().runs;
  }

  /** Built at the first read (after a subclass's constructor ran), then kept: one identity per driver. */
  private drivers(): MemoryDrivers {
    this.views ??= memoryDrivers(this);
    return this.views;
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    this.touch();
    const now = Date.now();
    const holder = this.store.live(request.key, now);
    if (holder) return { acquired: false, retryAfterMs: holder.expiresAt - now };
    return { acquired: true, grant: this.take(request, now) };
  }

  /** Sets the entry for a free key; the caller has checked that it is free in this same tick. */
  protected take(request: AcquireRequest, now: number, candidate?: string): Grant {
    const lockDelayMs = request.lockDelayMs ?? 0;
    const grant: Grant = {
      key: request.key,
      owner: request.owner,
      token: randomUUID(),
      fence: this.store.nextFence(request.key),
      ...(lockDelayMs > 0 ? { lockDelayMs } : {}),
    };
    // Lock-delay: the entry outlives the holder's lease by the delay; only a release deletes it sooner.
    this.store.set(request.key, {
      token: grant.token,
      owner: grant.owner,
      fence: grant.fence ?? 0,
      expiresAt: now + request.ttlMs + lockDelayMs,
      ...(candidate === undefined ? {} : { candidate }),
      lost: (cause) => request.onLost(grant, cause),
    });
    return grant;
  }

  /** All or nothing in one synchronous step: every key is checked before any is set. */
  async tryAcquireMany(requests: readonly AcquireRequest[]): Promise<MultiAttemptResult> {
    this.touch();
    const now = Date.now();
    for (const request of requests) {
      const holder = this.store.live(request.key, now);
      if (holder) return { acquired: false, busyKey: request.key, retryAfterMs: holder.expiresAt - now };
    }
    return { acquired: true, grants: requests.map((request) => this.take(request, now)) };
  }

  /** A term is the fenced lock on the election's key, with the candidate's id beside it. */
  async campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    for (;;) {
      this.touch();
      const now = Date.now();
      const holder = this.store.live(request.key, now);
      if (!holder) {
        const grant: TermGrant = { ...this.take(request, now, request.candidate), sentAt: now };
        return grant;
      }
      request.onContended?.();
      if (now >= deadline || signal.aborted) return undefined;
      const woken = await this.waitForChange(request.key, Math.min(deadline - now, holder.expiresAt - now + 1), signal).then(
        () => true,
        () => false,
      );
      if (!woken) return undefined;
    }
  }

  async leader(key: string): Promise<string | undefined> {
    this.touch();
    return this.store.live(key, Date.now())?.candidate;
  }

  async leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    this.touch();
    const holder = this.store.live(key, Date.now());
    return holder?.candidate === undefined ? undefined : { id: holder.candidate, term: holder.fence };
  }

  async inspect(key: string): Promise<BackendInspection> {
    this.touch();
    return inspectMemory(this.store, key, Date.now());
  }

  async forceRelease(key: string, by: string): Promise<boolean> {
    this.touch();
    return forceReleaseMemory(this.store, key, by, Date.now(), this.name);
  }

  async *listKeys(prefix: string): AsyncIterable<string> {
    this.touch();
    yield* listMemoryKeys(this.store, prefix, Date.now());
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    this.touch();
    const now = Date.now();
    const holder = this.store.live(grant.key, now);
    if (holder?.token !== grant.token) return false;
    holder.expiresAt = now + ttlMs + (grant.lockDelayMs ?? 0);
    return true;
  }

  /** The entry's token is this grant's, and its lease runs (the store's clock is the server's here). */
  async validate(grant: Grant): Promise<boolean> {
    this.touch();
    const now = Date.now();
    return this.store.live(grant.key, now)?.token === grant.token;
  }

  /** One synchronous step for every grant (a multi-lock). */
  async validateMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    return Promise.all(grants.map((grant) => this.validate(grant)));
  }

  async release(grant: Grant): Promise<boolean> {
    this.touch();
    const holder = this.store.live(grant.key, Date.now());
    if (holder?.token !== grant.token) return false;
    this.store.delete(grant.key);
    return true;
  }

  /** The run-once record (the runs driver): a map beside the locks, compare-and-set on the run id. */
  async saveRun(key: string, runId: string, record: string, replaces?: string): Promise<boolean> {
    this.touch();
    if (replaces !== undefined && this.store.runs.get(key)?.runId !== replaces) return false;
    this.store.runs.set(key, { runId, record });
    return true;
  }

  async loadRun(key: string): Promise<string | undefined> {
    this.touch();
    return this.store.runs.get(key)?.record;
  }

  waitForChange(key: string, maxWaitMs: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    // Released between the failed attempt and now? Then there is nothing to wait for.
    if (!this.store.live(key, Date.now())) return Promise.resolve();
    return this.store.waiters.wait(key, maxWaitMs, signal);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private touch(): void {
    if (this.closed) throw new Error('memory backend closed');
    this.store.operations += 1;
  }
}

/** `memory://` or `memory://name`: clients with the same name share locks within this process. */
export const memoryBackendFactory: BackendFactory = ({ url, options }) => {
  const unknown = [...(url?.searchParams.keys() ?? [])].filter((name) => name !== 'prefix');
  if (unknown.length > 0) throw new InvalidArgumentError('url', `memory:// takes no parameters but "prefix"; got ${unknown.join(', ')}`);
  const optionName = Object.keys(options).find((name) => name !== 'name');
  if (optionName !== undefined) throw new InvalidArgumentError(`option "${optionName}"`, 'the memory backend only takes "name"');
  const name = typeof options.name === 'string' ? options.name : url?.hostname || 'default';
  return new MemoryBackend(memoryStore(name));
};

/** A memory backend on a named store, for tests and embedding. */
export function createMemoryBackend(name = 'default'): MemoryBackend {
  return new MemoryBackend(memoryStore(name));
}
