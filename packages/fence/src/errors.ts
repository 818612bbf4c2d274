import { DeadboltError } from '@deadbolt/core';

/**
 * A write was refused because a newer holder of the lock has already written with a larger fence.
 * The holder that sent `fence` lost its lock (its lease ran out while it stalled: a GC pause, a
 * frozen VM, a slow network) even if it never noticed. Retrying cannot help: stop the protected
 * work, roll back the transaction it is in, and acquire the lock again if the work must go on.
 */
export class StaleFenceError extends DeadboltError {
  override readonly code = 'STALE_FENCE';
  /** The resource the write was for. */
  readonly resource: string;
  /** The refused fence: the one this writer sent. */
  readonly fence: number;
  /** The newer fence already recorded for the resource. */
  readonly newerFence: number;

  constructor(resource: string, fence: number, newerFence: number, options: { cause?: unknown } = {}) {
    super(
      `stale fence ${fence}: a newer holder of the lock already wrote with fence ${newerFence}, so this write was refused and nothing was written. ` +
        'This holder lost its lock: stop the protected work and do not retry the write with this fence (acquire the lock again for a new one)',
      { key: resource, cause: options.cause },
    );
    this.resource = resource;
    this.fence = fence;
    this.newerFence = newerFence;
  }
}
