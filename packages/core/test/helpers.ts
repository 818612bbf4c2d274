import { randomUUID } from 'node:crypto';
import type { AcquireRequest, AttemptResult, Grant, LockBackend } from '../src/adapter/index.js';
import { createMemoryBackend, memoryStore, type MemoryBackend, type MemoryStore } from '../src/adapter/index.js';
import type { LockClient, LockEvents } from '../src/index.js';

/** A store name no other test uses, so tests never see each other's locks. */
export function uniqueName(label: string): string {
  return `${label}-${randomUUID().slice(0, 8)}`;
}

/** `memory://name` on a fresh named store, and that store, to look behind the client's back. */
export function freshMemory(label: string): { url: string; name: string; store: MemoryStore } {
  const name = uniqueName(label);
  return { url: `memory://${name}`, name, store: memoryStore(name) };
}

/** Resolves with the first emission of `event` (optionally one that matches `filter`). */
export function nextEvent<E extends keyof LockEvents>(
  client: LockClient,
  event: E,
  filter: (...args: LockEvents[E]) => boolean = () => true,
): Promise<LockEvents[E][0]> {
  return new Promise((resolve) => {
    const listener = (...args: LockEvents[E]): void => {
      if (!filter(...args)) return;
      client.off(event, listener);
      resolve(args[0]);
    };
    client.on(event, listener);
  });
}

/** Records every event a client emits, in order. */
export function recordEvents(client: LockClient): { name: keyof LockEvents; payload: unknown }[] {
  const seen: { name: keyof LockEvents; payload: unknown }[] = [];
  for (const name of ['acquired', 'released', 'renewed', 'lost', 'contended', 'error'] as const) {
    client.on(name, (payload: unknown) => seen.push({ name, payload }));
  }
  return seen;
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Behaviour a test can switch on the spy backend. */
export interface SpyControls {
  /** Answer every renew/renewMany with false (the server says: not yours any more). */
  refuseRenewals: boolean;
  /** Make renew/renewMany throw (the server does not answer). */
  failRenewals: boolean;
  /** Make release throw. */
  failReleases: boolean;
  /** Make tryAcquire throw. */
  failAcquires: boolean;
  /** Make tryAcquire never settle. */
  hangAcquires: boolean;
}

/**
 * A real memory backend with a recording shell: counts calls, can refuse or fail on demand, and
 * optionally offers renewMany (the memory backend itself has none) or hides waitForChange (to test
 * the polling fallback). The locking itself is always the memory backend's.
 */
export class SpyBackend implements LockBackend {
  readonly calls = { tryAcquire: 0, renew: 0, renewMany: 0, release: 0, waitForChange: 0, close: 0 };
  readonly renewManyBatches: number[] = [];
  readonly controls: SpyControls = {
    refuseRenewals: false,
    failRenewals: false,
    failReleases: false,
    failAcquires: false,
    hangAcquires: false,
  };
  readonly inner: MemoryBackend;
  readonly name: string;
  renewMany?: (grants: readonly Grant[], ttlMs: readonly number[]) => Promise<readonly boolean[]>;
  waitForChange?: (key: string, maxWaitMs: number, signal: AbortSignal) => Promise<void>;

  constructor(
    readonly storeName: string,
    options: { renewMany?: boolean; notifications?: boolean; name?: string } = {},
  ) {
    this.inner = createMemoryBackend(storeName);
    this.name = options.name ?? 'spy-memory';
    if (options.renewMany) {
      this.renewMany = async (grants, ttlMs) => {
        this.calls.renewMany += 1;
        this.renewManyBatches.push(grants.length);
        this.checkRenewals();
        return Promise.all(
          grants.map((grant, index) => (this.controls.refuseRenewals ? false : this.inner.renew(grant, ttlMs[index] ?? 0))),
        );
      };
    }
    if (options.notifications !== false) {
      this.waitForChange = (key, maxWaitMs, signal) => {
        this.calls.waitForChange += 1;
        return this.inner.waitForChange(key, maxWaitMs, signal);
      };
    }
  }

  get capabilities(): LockBackend['capabilities'] {
    return this.waitForChange ? this.inner.capabilities : { ...this.inner.capabilities, notifications: false };
  }

  get store(): MemoryStore {
    return this.inner.store;
  }

  /** Read, write and permit holds stay the memory backend's own driver's (no spy on them). */
  get kinds(): MemoryBackend['kinds'] {
    return this.inner.kinds;
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    this.calls.tryAcquire += 1;
    if (this.controls.hangAcquires) return new Promise<never>(() => undefined);
    if (this.controls.failAcquires) throw new Error('connection refused');
    return this.inner.tryAcquire(request);
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    this.calls.renew += 1;
    this.checkRenewals();
    if (this.controls.refuseRenewals) return false;
    return this.inner.renew(grant, ttlMs);
  }

  async release(grant: Grant): Promise<boolean> {
    this.calls.release += 1;
    if (this.controls.failReleases) throw new Error('connection reset');
    return this.inner.release(grant);
  }

  async close(): Promise<void> {
    this.calls.close += 1;
    await this.inner.close();
  }

  private checkRenewals(): void {
    if (this.controls.failRenewals) throw new Error('renewal timed out');
  }
}
