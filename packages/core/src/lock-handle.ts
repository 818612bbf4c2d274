import type { Lease } from './lease.js';
import { inspectSafely } from './adapter/safe-inspect.js';
import type { Lock } from './types.js';

/** The operations a handle delegates to its client: the policy stays in one place. */
export interface HandleOwner {
  renewHandle(handle: LockHandle): Promise<void>;
  releaseHandle(handle: LockHandle): Promise<void>;
  /** Declares the lease lost if its deadline has passed (a paused process sees it on the next read). */
  checkDeadline(lease: Lease): void;
}

/** One hold of a lease. Re-entries get their own handle; each must be released. */
export class LockHandle implements Lock {
  released = false;
  private releasing: Promise<void> | undefined;

  constructor(
    readonly lease: Lease,
    private readonly client: HandleOwner,
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

  get signal(): AbortSignal {
    if (!this.released) this.client.checkDeadline(this.lease);
    return this.lease.controller.signal;
  }

  get held(): boolean {
    if (this.released) return false;
    this.client.checkDeadline(this.lease);
    return !this.lease.lost;
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

// A lock prints as what it is, never as its client (and through it the backend's connections).
inspectSafely(LockHandle, (lock) => ({ key: lock.key, owner: lock.owner, fence: lock.fence, held: lock.held }));
