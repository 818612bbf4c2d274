import type { AcquireRequest, AttemptResult, Grant, LockKind } from '../backend.js';
import type { KindsDriver } from '../contract/drivers.js';
import type { QueuedGrant } from './queued.js';
import type { MemoryStore } from './store.js';

type KindRequest = AcquireRequest & { readonly kind: LockKind };

/**
 * The memory backend's read-write locks and semaphores: the store's FIFO queue (queued.ts). It
 * issues, renews, validates and releases only its own grants; core never sends it a mutex hold.
 * Its native `acquire` makes the first attempt itself and reports queueing through onContended.
 */
export class MemoryKinds implements KindsDriver {
  constructor(
    private readonly store: MemoryStore,
    /** The backend's check that it is open, and its count of operations that reached the store. */
    private readonly touch: () => void,
  ) {}

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    this.touch();
    const result = this.store.queued.tryAcquire(kinded(request), Date.now());
    return 'grant' in result ? { acquired: true, grant: result.grant } : { acquired: false, retryAfterMs: result.retryAfterMs };
  }

  /** Queues in the store's FIFO (what keeps writers from starving): granted at once when it fits and nobody waits. */
  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    this.touch();
    return this.store.queued.acquire(kinded(request), deadline, signal);
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    this.touch();
    return this.store.queued.renew(grant as QueuedGrant, ttlMs, Date.now());
  }

  async release(grant: Grant): Promise<boolean> {
    this.touch();
    return this.store.queued.release(grant as QueuedGrant, Date.now());
  }

  /** This exact hold is still in its entry, its lease running. */
  async validate(grant: Grant): Promise<boolean> {
    this.touch();
    return this.store.queued.holds(grant as QueuedGrant, Date.now());
  }

  /** One synchronous step for every grant. */
  async validateMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    this.touch();
    const now = Date.now();
    return grants.map((grant) => this.store.queued.holds(grant as QueuedGrant, now));
  }
}

/** Core sends this driver kinded requests only: one without a kind is a caller's bug, not a mutex. */
function kinded(request: AcquireRequest): KindRequest {
  if (request.kind === undefined) throw new TypeError('the memory kinds driver was sent a request without a kind');
  return request as KindRequest;
}
