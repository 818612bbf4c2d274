import type { Grant, LockBackend } from './backend.js';
import type { AcquirePlan } from './acquire-plan.js';
import type { HoldKeeper } from './contract/drivers.js';
import type { LockTimeoutError } from './errors.js';
import type { AcquireOptions, Lock, LockEvents } from './types.js';

/**
 * What the primitives built on locks (multi-lock, election) need of their client: the same
 * validation, backend calls, lease bookkeeping, events and telemetry as a plain lock, so a grant
 * they obtain is renewed, released and declared lost exactly like one.
 */
export interface PrimitiveHost {
  readonly clientId: string;
  /** Aborts when the client closes. */
  readonly closing: AbortSignal;
  label(): string;
  backend(): Promise<LockBackend>;
  assertOpen(key: string): void;
  /** Validates and resolves one key's options (no I/O). */
  plan(backend: LockBackend, key: string, options: AcquireOptions | undefined, mayWait: boolean): AcquirePlan;
  /** The client's own single-key acquire. */
  acquire(key: string, options: AcquireOptions | undefined): Promise<Lock>;
  /** Whether this client holds a live lease on (fullKey, owner): a re-entry, which only the single-key path counts. */
  holds(fullKey: string, owner: string): boolean;
  /** Adopts a grant as a held lock kept by `keeper`, the driver that issued it: lease, renewal, 'acquired' event, metrics. */
  adopt(backend: LockBackend, plan: AcquirePlan, grant: Grant, sentAt: number, startedAt: number, keeper: HoldKeeper): Lock;
  /**
   * One guarded backend call (typed errors, a safety-net deadline, close() cuts it short, a late
   * single grant is given back, through `undoBy`, the driver that issued it: default the mutex's).
   * `waitUntil`: a native wait's own deadline, added to the net. `release`: a tidy-up release
   * that close() must not cut short.
   */
  call<T>(
    backend: LockBackend,
    action: string,
    key: string,
    fn: () => Promise<T>,
    how?: { readonly waitUntil?: number; readonly release?: boolean; readonly undoBy?: HoldKeeper },
  ): Promise<T>;
  onLost(grant: Grant, cause: Error): void;
  emit<E extends keyof LockEvents>(event: E, ...args: LockEvents[E]): void;
  timeout(backend: LockBackend, plan: AcquirePlan, attempts: number): LockTimeoutError;
}
