/**
 * A heartbeat tick whose first beat falls at a random point of the second half of the period, then
 * one every period (a beat earlier than due is always safe). Clients started together (a deploy, a
 * bench's workers in one process) would otherwise beat in the same millisecond, and that burst of
 * re-checks stalls every hand-off in flight behind it. Not in the first half: a beat right after a
 * waiter queued has nothing to mend yet, and would hide a missing grant message from a test's
 * hand-off bound. Unref'd: a tick never keeps the process alive.
 */
export class JitteredTicker {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly periodMs: number,
    private readonly beat: () => void,
  ) {}

  get running(): boolean {
    return this.timer !== undefined;
  }

  start(): void {
    if (this.timer !== undefined) return;
    const first = setTimeout(
      () => {
        if (this.timer !== first) return;
        this.timer = setInterval(this.beat, this.periodMs);
        this.timer.unref();
        this.beat();
      },
      Math.floor(this.periodMs / 2 + (Math.random() * this.periodMs) / 2),
    );
    first.unref();
    this.timer = first;
  }

  stop(): void {
    // clearInterval clears either kind of Node timer: the first beat's timeout or the interval.
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
