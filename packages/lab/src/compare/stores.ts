import { now, type WriteRecord } from './history.js';

/**
 * The plain register: the protected resource with no check at all, read-modified-written under the
 * lock. It accepts every write, so a stale holder silently overwrites a newer one's work: this is
 * the register that shows what an overlap costs. Its fenced counterpart is a real data store behind
 * `@deadbolt/fence` (fenced-store.ts). It lives in the harness, on one clock for every client.
 */
export class PlainRegister {
  private value = 0;
  /** The highest fence written so far, to label stale writes as the fenced store would refuse them. */
  private highestFence = -Infinity;
  readonly writes: WriteRecord[] = [];

  read(): number {
    return this.value;
  }

  /** Always accepted; returns true. */
  write(client: string, fence: number | undefined, value: number): boolean {
    const stale = fence !== undefined && fence < this.highestFence;
    if (fence !== undefined && fence > this.highestFence) this.highestFence = fence;
    this.value = value;
    this.writes.push({ client, at: now(), fence, value, accepted: true, stale });
    return true;
  }
}
