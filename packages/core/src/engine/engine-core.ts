import { EventEmitter, setMaxListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { LockDefaults, LockEvents } from '../api/lock.js';
import type { LockClientConfig } from '../api/client.js';
import { resolveConfig } from '../config.js';
import type { LockBackend } from '../contract/backend.js';
import { driversOf, type Drivers } from '../contract/drivers-of.js';
import { BackendUnavailableError, ClientClosedError } from '../errors.js';
import { instruments } from '../telemetry.js';
import { callBackend, type CallPolicy, type CallSite } from './backend-call.js';
import type { Lease } from './lease.js';
import { Renewer } from './renewer.js';

/**
 * The engine's ground floor: the backend's loading, the lease table, events, the call path (every
 * backend call through the call guard) and the close path. Holding (holding.ts) and acquiring
 * (acquire.ts) are built on it; the engine (engine.ts) is what the client and the primitives use.
 */
export abstract class EngineCore {
  /** Distinguishes owners of different client instances, like Redisson's connection-manager id. */
  readonly id = randomUUID();
  readonly emitter = new EventEmitter();
  protected readonly defaults: LockDefaults;
  protected readonly configuredPrefix: string | undefined;
  readonly backendLoading: Promise<LockBackend>;
  protected renewer: Renewer | undefined;
  /** The backend once loaded: the hot path reads it without awaiting backendLoading again. */
  protected loaded: LockBackend | undefined;
  /** The loaded backend's drivers (contract/drivers-of.ts), read once. */
  protected drivers: Drivers | undefined;
  protected readonly leases = new Map<string, Lease>();
  protected closed: Promise<void> | undefined;
  protected backendLabel: string;

  protected readonly closer = new AbortController();
  /** Aborts when the client closes: every pending acquire and wait listens to it. */
  readonly closing: AbortSignal = this.closer.signal;

  constructor(config?: LockClientConfig) {
    const resolved = resolveConfig(config);
    this.defaults = resolved.defaults;
    this.configuredPrefix = resolved.prefix;
    this.backendLabel = resolved.scheme;
    this.emitter.setMaxListeners(0);
    // Every pending acquire listens for close(); thousands may wait at once.
    setMaxListeners(0, this.closing);
    if (resolved.backend instanceof Promise) {
      this.backendLoading = resolved.backend.then((backend) => this.useBackend(backend));
      this.backendLoading.catch(() => undefined);
    } else {
      this.backendLoading = Promise.resolve(this.useBackend(resolved.backend));
    }
  }

  get backend(): string {
    return this.backendLabel;
  }

  /** True to the clock as `held` is: a lease past its deadline (a stall) is declared lost first. O(held locks). */
  get heldCount(): number {
    for (const lease of this.leases.values()) lease.checkClock();
    return this.leases.size;
  }

  async capabilities(): Promise<LockBackend['capabilities']> {
    return (await this.backendLoading).capabilities;
  }

  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  /** Declares a lease lost (holding.ts): its signal aborts, 'lost' is emitted. */
  protected abstract markLost(lease: Lease, reason: string, cause?: unknown): void;

  /** A refused renewal (holding.ts): lost, saying who took it where an operator forced it away. */
  protected abstract markRefused(backend: LockBackend, lease: Lease, reason: string): Promise<void>;

  protected forget(lease: Lease): void {
    if (this.leases.get(lease.id) === lease) this.leases.delete(lease.id);
    this.renewer?.remove(lease);
  }

  protected useBackend(backend: LockBackend): LockBackend {
    this.backendLabel = backend.name;
    this.drivers = driversOf(backend);
    this.loaded = backend;
    this.renewer = new Renewer(backend, {
      renewed: (lease) => {
        this.emit('renewed', { key: lease.userKey, owner: lease.owner });
        instruments.renewals.add(1, { backend: backend.name });
      },
      lost: (lease, reason, cause) => this.markLost(lease, reason, cause),
      refused: (lease, reason) => void this.markRefused(backend, lease, reason),
      expiring: (lease, remainingMs, error) => this.emit('expiring', { key: lease.userKey, owner: lease.owner, remainingMs, error }),
      failed: (lease, error) =>
        this.reportError(lease.userKey, new BackendUnavailableError('renew', { key: lease.userKey, backend: backend.name, cause: error })),
    });
    return backend;
  }

  /** One backend call through the call guard (backend-call.ts), cut short by close() unless told otherwise. */
  call<T>(backend: LockBackend, action: string, key: string, fn: () => Promise<T>, policy: CallPolicy = {}): Promise<T> {
    return callBackend(backend, action, key, fn, policy, this.callSite);
  }

  /** `call`'s close() signal: made once, not per call. */
  protected readonly callSite: CallSite = { closing: this.closing };

  assertOpen(key: string): void {
    if (this.closed) throw new ClientClosedError({ key, backend: this.backendLabel });
  }

  /** Whether anyone listens: the hot path skips building an event nobody receives. */
  protected listens(event: keyof LockEvents): boolean {
    return this.emitter.listenerCount(event) > 0;
  }

  emit<E extends keyof LockEvents>(event: E, ...args: LockEvents[E]): void {
    try {
      this.emitter.emit(event, ...args);
    } catch (error) {
      // A throwing listener must not break lock bookkeeping.
      if (event !== 'error') this.reportError(undefined, error);
    }
  }

  reportError(key: string | undefined, error: unknown): void {
    // Node throws on an 'error' event nobody listens to; a background renewal hiccup must not crash the app.
    if (this.emitter.listenerCount('error') > 0)
      this.emit('error', { key, error: error instanceof Error ? error : new Error(String(error)) });
  }

  protected async shutdown(): Promise<void> {
    this.closer.abort(new ClientClosedError({ backend: this.backendLabel }));
    let backend: LockBackend;
    try {
      backend = await this.backendLoading;
    } catch {
      return; // the backend never loaded: nothing to release or close
    }
    const leases = [...this.leases.values()];
    this.renewer?.stop();
    await Promise.allSettled(
      leases.map(async (lease) => {
        this.forget(lease);
        // The holders must learn that the lock is going: their signal aborts, `held` turns false,
        // renew() rejects, and a later release()/dispose is the no-op tidy-up of an ended lease
        // instead of a call on the closed backend.
        lease.lost = true;
        lease.controller.abort(new ClientClosedError({ key: lease.userKey, backend: backend.name }));
        await this.call(backend, 'release', lease.userKey, () => lease.keeper.release(lease.grant), { closable: false });
      }),
    );
    await backend.close();
  }
}
