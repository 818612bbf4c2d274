/**
 * Keys of ours whose delete failed or whose create may have landed unseen (a txn that timed out):
 * left alone, such a key on our lease, which we keep alive, would block its lock for as long as the
 * client lives. Retried in the background until the delete answers; close() stops it (the lease's
 * revoke then takes the key).
 */
export class PendingDeletes {
  private readonly pending = new Map<string, () => Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly retryMs: number) {}

  /** Retries `remove` until it resolves (its outcome, deleted or already gone, does not matter). */
  add(key: string, remove: () => Promise<unknown>): void {
    if (this.closed) return;
    this.pending.set(key, remove);
    this.schedule();
  }

  close(): void {
    this.closed = true;
    this.pending.clear();
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.timer !== undefined || this.closed || this.pending.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.retry();
    }, this.retryMs);
  }

  private async retry(): Promise<void> {
    for (const [key, remove] of [...this.pending]) {
      try {
        await remove();
        if (this.pending.get(key) === remove) this.pending.delete(key);
      } catch {
        // Still unreachable: the next round tries again.
      }
    }
    this.schedule();
  }
}
