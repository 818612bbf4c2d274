import type { Lease } from './lease.js';
import { inspectSafely } from '../adapter/safe-inspect.js';
import { LockLostError } from '../errors.js';
import type { Lock } from '../api/lock.js';

/** The operations a handle delegates to its client: the policy stays in one place. */
export interface HandleOwner {
  renewHandle(handle: LockHandle): Promise<void>;
  releaseHandle(handle: LockHandle): Promise<void>;
  /** Whether the server still holds every handle's grant (holding.ts). */
  validateHandles(handles: readonly LockHandle[]): Promise<boolean>;
  /** The backend's name, for the errors a handle throws itself. */
  readonly backend: string;
}

/** One hold of a lease. Re-entries get their own handle; each must be released. */
export class LockHandle implements Lock {
  released = false;
  private releasing: Promise<void> | undefined;

  constructor(
    readonly lease: Lease,
    /** Its client: a multi-lock asks it to validate all its handles in one call. */
    readonly client: HandleOwner,
  ) {}

  get key(): string {
    return this.lease.userKey;
  }

  get owner(): string {
    return this.lease.owner;
  }

  get fence(): number | undefined {
    return this.lease.grant.fence;
  }

  /** The lease's signal: taking it, and every read of its state later, checks the lease deadline first (lease.ts). */
  get signal(): AbortSignal {
    if (!this.released) this.lease.checkClock();
    return this.lease.controller.signal;
  }

  get held(): boolean {
    if (this.released) return false;
    this.lease.checkClock();
    return !this.lease.lost;
  }

  assertHeld(): void {
    const context = { key: this.key, backend: this.client.backend };
    if (this.released) throw new LockLostError('the lock was released', context);
    this.lease.checkClock();
    if (this.lease.lost) throw lossOf(this.lease.controller.signal.reason, context);
  }

  /** The lease's expiring signal: aborts at the first jeopardy or at the loss (lease.ts). */
  get expiringSignal(): AbortSignal {
    return this.lease.expiringSignal;
  }

  validate(): Promise<boolean> {
    return this.client.validateHandles([this]);
  }

  renew(): Promise<void> {
    return this.client.renewHandle(this);
  }

  /** Idempotent: a second call returns the first call's promise. */
  release(): Promise<void> {
    this.releasing ??= this.client.releaseHandle(this);
    return this.releasing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

/** What assertHeld throws for a lost lease: its own LockLostError, or one that wraps why it ended (close()). */
function lossOf(reason: unknown, context: { key: string; backend: string }): LockLostError {
  if (reason instanceof LockLostError) return reason;
  const why = reason instanceof Error ? reason.message : 'the lock is no longer held';
  return new LockLostError(why, { ...context, cause: reason });
}

// A lock prints as what it is, never as its client (and through it the backend's connections).
inspectSafely(LockHandle, (lock) => ({ key: lock.key, owner: lock.owner, fence: lock.fence, held: lock.held }));

/**
 * Validates `locks` together: one call to their client (one round trip per connection where the
 * backend batches) when they are all handles of one client, else each on its own.
 */
export async function validateTogether(locks: readonly Lock[]): Promise<boolean> {
  const first = locks[0];
  if (first instanceof LockHandle && locks.every((lock) => lock instanceof LockHandle && lock.client === first.client))
    return first.client.validateHandles(locks as readonly LockHandle[]);
  const answers = await Promise.all(locks.map((lock) => lock.validate()));
  return answers.every(Boolean);
}
