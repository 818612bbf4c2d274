/**
 * Deletes lock parents that may have become empty, once they have been idle for `delayMs` (no
 * release or give-up of ours on them in that time), all due paths on one timer. Deleting at once
 * made every cycle of a key used in a loop pay two more round trips (delete the parent, then
 * re-create it on the next acquire); deleting `delayMs` after the first release still sent one
 * doomed delete per second per client on a hot key (50 clients on one key: 50 requests/s through
 * the server's write pipeline, a third of a packet per hand-off). ZooKeeper refuses to delete a
 * parent that has children again by then, so a late sweep never removes a live lock; a contender
 * that races a sweep sees NO_NODE on create and re-creates the parent.
 */
export class ParentSweeper {
  /** Path -> when we last released or gave up on it. */
  private readonly pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly delayMs: number,
    private readonly removeIfEmpty: (path: string) => Promise<void>,
  ) {}

  /**
   * With no delay the parent is removed before the returned promise resolves (the caller's release
   * waits for it); with a delay nothing is returned (no promise per release to wait on).
   */
  schedule(path: string): Promise<void> | undefined {
    if (this.delayMs === 0) return this.removeIfEmpty(path);
    // Re-inserted so the map stays in touch order: the first entry is always the next one due.
    this.pending.delete(path);
    this.pending.set(path, Date.now());
    this.arm();
    return undefined;
  }

  /** Sweeps everything pending now (close() leaves nothing pending behind). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const due = [...this.pending.keys()];
    this.pending.clear();
    await Promise.all(due.map((path) => this.removeIfEmpty(path)));
  }

  private arm(): void {
    if (this.timer !== undefined) return;
    const first = this.pending.values().next();
    if (first.done === true) return;
    // unref: a process may exit with a sweep pending; the empty parent it leaves is harmless.
    this.timer = setTimeout(() => void this.sweepIdle(), Math.max(0, first.value + this.delayMs - Date.now())).unref();
  }

  private async sweepIdle(): Promise<void> {
    this.timer = undefined;
    const now = Date.now();
    const due: string[] = [];
    for (const [path, touchedAt] of this.pending) {
      if (now - touchedAt < this.delayMs) break; // touch order: the rest are younger
      due.push(path);
    }
    for (const path of due) this.pending.delete(path);
    this.arm();
    await Promise.all(due.map((path) => this.removeIfEmpty(path)));
  }
}
