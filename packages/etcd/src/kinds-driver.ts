import type { AcquireRequest, AttemptResult, Grant, KindsDriver } from '@deadbolt/core/adapter';
import { ContenderKeeper } from './contender-keeper.js';

/**
 * Read-write locks (Go's contrib/recipes RWMutex layout) and FIFO semaphores (kinds.ts plans them):
 * each a contender key in its own queue, kept like the mutex's by the ContenderKeeper.
 */
export class EtcdKinds extends ContenderKeeper implements KindsDriver {
  /** One txn; never queues: a contender that may not hold yet deletes its key again. */
  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const site = this.site;
    return site.guard('acquire', request.key, async () => {
      const grant = await site.contend(request, Buffer.alloc(0), false, Date.now(), site.closing.signal);
      return grant === undefined ? { acquired: false } : { acquired: true, grant };
    });
  }

  /** Native waiting: our key queues us by revision; queueing is the same txn as a try, so it is the first attempt too. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.site.guard('acquire', request.key, () => this.site.contend(request, Buffer.alloc(0), true, deadline, signal));
  }
}
