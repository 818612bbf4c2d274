/**
 * Deletes lock parents that may have become empty, `delayMs` after the release that emptied them,
 * all due paths on one timer. Deleting at once made every cycle of a key used in a loop pay two
 * more round trips (delete the parent, then re-create it on the next acquire). ZooKeeper refuses to
 * delete a parent that has children again by then, so a late sweep never removes a live lock; a
 * contender that races a sweep sees NO_NODE on create and re-creates the parent.
 */
export class ParentSweeper {
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly delayMs: number,
    private readonly removeIfEmpty: (path: string) => Promise<void>,
  ) {}

  /** With no delay the parent is removed before this resolves (the caller's release waits for it). */
  async schedule(path: string): Promise<void> {
    if (this.delayMs === 0) return this.removeIfEmpty(path);
    this.pending.add(path);
    // unref: a process may exit with a sweep pending; the empty parent it leaves is harmless.
    this.timer ??= setTimeout(() => void this.flush(), this.delayMs).unref();
  }

  /** Sweeps everything pending now (the timer, and close(), which leaves nothing pending behind). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const due = [...this.pending];
    this.pending.clear();
    await Promise.all(due.map((path) => this.removeIfEmpty(path)));
  }
}
