import { StaleFenceError } from './errors.js';
import { checkFence, checkResource } from './validate.js';

/**
 * The admission of one fence for one resource. Until it is released, no other write of the
 * resource is admitted, so the admitted write lands before any later one (a database's row lock
 * until commit plays this part in `admitFence`).
 */
export interface FenceAdmission extends AsyncDisposable {
  readonly resource: string;
  readonly fence: number;
  /** Ends the admission: the next writer of the resource may be admitted. Idempotent. */
  release(): void;
}

/**
 * What stands in front of a store's writes: admits a fence no smaller than the largest admitted
 * for the resource (equal is admitted: one holder writes several times), and throws
 * StaleFenceError for a smaller one. Bad input is an InvalidArgumentError before anything else.
 */
export interface FenceGuard {
  admit(resource: string, fence: number): Promise<FenceAdmission>;
}

/** Admits `fence`, runs `write` inside the admission, releases it whatever `write` does. */
export async function fencedWrite<T>(guard: FenceGuard, resource: string, fence: number, write: () => Promise<T> | T): Promise<T> {
  const admission = await guard.admit(resource, fence);
  try {
    return await write();
  } finally {
    admission.release();
  }
}

/**
 * A guard kept in this process's memory: for a single-process service that owns its data (the
 * HTTP example in the fencing guide). Records are not durable: a restart forgets them, so a service with
 * several instances or restarts keeps the highest fence in its own database instead (admitFence).
 * An admitted fence stays recorded even if the write then fails, which only refuses older fences.
 */
export function createMemoryFenceGuard(): FenceGuard {
  const highest = new Map<string, number>();
  // The tail of each resource's queue of admissions: admit waits for the one before it.
  const tails = new Map<string, Promise<void>>();
  return {
    async admit(resource, fence) {
      checkResource(resource);
      checkFence(fence, resource);
      const before = tails.get(resource);
      let done!: () => void;
      const mine = new Promise<void>((resolve) => (done = resolve));
      tails.set(resource, mine);
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        if (tails.get(resource) === mine) tails.delete(resource);
        done();
      };
      if (before !== undefined) await before;
      const newer = highest.get(resource);
      if (newer !== undefined && newer > fence) {
        release();
        throw new StaleFenceError(resource, fence, newer);
      }
      highest.set(resource, fence);
      return { resource, fence, release, [Symbol.asyncDispose]: async () => release() };
    },
  };
}
