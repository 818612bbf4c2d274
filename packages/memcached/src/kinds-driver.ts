import type { AcquireRequest, AttemptResult, Grant, KindsDriver } from '@deadbolt/core/adapter';
import { pollSlots, takeSlot, type SlotGrant } from './semaphore-slots.js';

/**
 * What the semaphore needs from the backend's items: the ADD of one slot key, the permits check,
 * and the CAS-guarded renew, release and read of an item named by its stored key. The mutex uses
 * the same operations on the lock's own key.
 */
export interface SlotItems {
  /** One ADD of `slotKey` for this request: its grant is a SlotGrant. */
  add(request: AcquireRequest, slotKey: string): Promise<AttemptResult>;
  /** The request's permits against the semaphore's record: InvalidArgumentError on a mismatch. */
  checkPermits(request: AcquireRequest, permits: number): Promise<void>;
  renew(grant: Grant, storedKey: string, ttlMs: number): Promise<boolean>;
  renewMany(grants: readonly Grant[], storedKeys: readonly string[], ttlMs: readonly number[]): Promise<readonly boolean[]>;
  release(grant: Grant, storedKey: string): Promise<boolean>;
  validate(grant: Grant, storedKey: string): Promise<boolean>;
}

/**
 * memcached's kinds: semaphores only (semaphore-slots.ts), permits requests and nothing else (the
 * backend offers no read-write lock). It keeps the permits it grants: each is a slot item.
 */
export class SemaphoreDriver implements KindsDriver {
  constructor(private readonly items: SlotItems) {}

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const permits = permitsOf(request);
    // The permits check and the slot ADD go out together (one round trip); a refused check gives the slot back.
    const [checked, taken] = await Promise.allSettled([
      this.items.checkPermits(request, permits),
      takeSlot(request, permits, (slot) => this.items.add(request, slot)),
    ]);
    if (checked.status === 'rejected') {
      if (taken.status === 'fulfilled' && taken.value.acquired) await this.release(taken.value.grant).catch(() => false);
      throw checked.reason;
    }
    if (taken.status === 'rejected') throw taken.reason;
    return taken.value;
  }

  /** Native waiting: polls the slots (no notifications); the first try is tryAcquire's. */
  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    const permits = permitsOf(request);
    return pollSlots(
      request,
      permits,
      (slot) => this.items.add(request, slot),
      deadline,
      signal,
      () => this.tryAcquire(request),
    );
  }

  renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return this.items.renew(grant, slotOf(grant), ttlMs);
  }

  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    return this.items.renewMany(grants, grants.map(slotOf), ttlMs);
  }

  release(grant: Grant): Promise<boolean> {
    return this.items.release(grant, slotOf(grant));
  }

  validate(grant: Grant): Promise<boolean> {
    return this.items.validate(grant, slotOf(grant));
  }
}

/** Every grant of this driver is a permit's: the slot item it holds. */
const slotOf = (grant: Grant): string => (grant as SlotGrant).slotKey;

function permitsOf(request: AcquireRequest): number {
  const kind = request.kind;
  if (kind?.type !== 'permit') throw new TypeError(`memcached's kinds driver serves permits, not ${kind?.type ?? 'a mutex'}`);
  return kind.permits;
}
