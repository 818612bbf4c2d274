import { now, type WriteRecord } from './history.js';

/**
 * The protected resource: a register read-modified-written under the lock. Two flavours show what
 * fencing buys (Kleppmann, "How to do distributed locking", 2016: the storage checks the token).
 */
export interface Register {
  read(): number;
  /** Returns whether the write was accepted. */
  write(client: string, fence: number | undefined, value: number): boolean;
  readonly writes: WriteRecord[];
}

/** Tracks the highest fence written so far so both stores can label stale writes alike. */
abstract class BaseRegister implements Register {
  protected value = 0;
  protected highestFence = -Infinity;
  readonly writes: WriteRecord[] = [];
  read(): number {
    return this.value;
  }
  protected isStale(fence: number | undefined): boolean {
    return fence !== undefined && fence < this.highestFence;
  }
  abstract write(client: string, fence: number | undefined, value: number): boolean;
}

/** Accepts any write: a stale holder silently overwrites a newer one's work. */
export class PlainRegister extends BaseRegister {
  write(client: string, fence: number | undefined, value: number): boolean {
    const stale = this.isStale(fence);
    if (fence !== undefined && fence > this.highestFence) this.highestFence = fence;
    this.value = value;
    this.writes.push({ client, at: now(), fence, accepted: true, stale });
    return true;
  }
}

/** Rejects a write whose fence is lower than the highest seen (equal is the same holder again). */
export class FencedRegister extends BaseRegister {
  write(client: string, fence: number | undefined, value: number): boolean {
    const stale = this.isStale(fence);
    if (stale) {
      this.writes.push({ client, at: now(), fence, accepted: false, stale });
      return false;
    }
    if (fence !== undefined && fence > this.highestFence) this.highestFence = fence;
    this.value = value;
    this.writes.push({ client, at: now(), fence, accepted: true, stale });
    return true;
  }
}
