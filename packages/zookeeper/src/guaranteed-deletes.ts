import type { Client } from 'node-zookeeper-client';
import { isInDoubt, isNoNode, remove } from './operations.js';

const retryEveryMs = 250;

/**
 * Curator's guaranteed delete (`delete().guaranteed()`, used by LockInternals.releaseLock): a lock
 * node whose delete failed, or may not have been applied (connection lost during a leader election,
 * no answer in time), is deleted again in the background until ZooKeeper confirms it is gone. Without
 * this the node outlives the release for as long as the session does, and every other client waits
 * on a lock nobody holds. One timer for all pending paths; unref'd, cleared by close().
 */
export class GuaranteedDeletes {
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly connected: () => Promise<Client>,
    private readonly operationTimeoutMs: number,
  ) {}

  add(path: string): void {
    if (this.closed) return;
    this.pending.add(path);
    this.schedule();
  }

  /** Whether a delete is pending (an acquire then retries them first). */
  get hasPending(): boolean {
    return this.pending.size > 0;
  }

  /** Tries every pending delete now (also called before each acquire). Never throws. */
  async retry(): Promise<void> {
    if (this.pending.size === 0) return;
    let client: Client;
    try {
      client = await this.connected();
    } catch {
      this.schedule();
      return;
    }
    for (const path of [...this.pending]) {
      try {
        await remove(client, path, Date.now() + this.operationTimeoutMs);
        this.pending.delete(path);
      } catch (error) {
        // Gone already (an earlier attempt was applied, or the session ended): done. In doubt: again later.
        if (isNoNode(error) || !isInDoubt(error)) this.pending.delete(path);
      }
    }
    if (this.pending.size > 0) this.schedule();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.retry();
    }, retryEveryMs).unref();
  }
}
