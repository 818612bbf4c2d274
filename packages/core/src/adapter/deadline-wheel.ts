/**
 * Many call deadlines on one timer (a hashed timing wheel, Varghese & Lauck 1987, coarsened: a
 * deadline fires late by at most 1/64 of its length, never early). A Node timer per call costs a
 * timer-list insert and removal on every call, and two timer lengths in flight (a command deadline
 * and a safety net) churn Node's timer priority queue as well: measured, that was about a tenth of an
 * uncontended Redis acquire+release. Here a call costs a bucket lookup and a linked-list insert and
 * unlink; the one timer aims at the earliest bucket.
 *
 * The timer is unref'd while nothing is watched (it stays armed, so a busy caller does not re-arm
 * it on every call) and keeps the process alive while a deadline is pending, as a call's own timer
 * would. `stop()` clears it: an adapter owns one wheel and stops it at close().
 */
export class DeadlineWheel {
  /** Buckets by fire time (ms, Date.now clock); `order` lists those times ascending. */
  private readonly buckets = new Map<number, Watch>();
  private readonly order: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private watched = 0;
  private stopped = false;

  /** Calls `expire` once, at or a little after `ms` from now, unless the returned watch is cancelled first. */
  watch(ms: number, expire: () => void): Watch {
    const entry = new Watch(this, expire);
    if (this.stopped) return entry;
    const slack = ms >= 128 ? Math.floor(ms / 64) : 1;
    const at = Math.ceil((Date.now() + ms) / slack) * slack;
    let bucket = this.buckets.get(at);
    if (bucket === undefined) {
      bucket = Watch.bucket(this);
      this.buckets.set(at, bucket);
      insertSorted(this.order, at);
    }
    entry.linkAfter(bucket);
    this.watched += 1;
    if (this.watched === 1) this.timer?.ref();
    if (at < this.timerAt) this.arm(at);
    return entry;
  }

  /** Clears the timer for good; pending watches never fire (their owner is closing). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    this.buckets.clear();
    this.order.length = 0;
    this.watched = 0;
  }

  /** @internal a watch left its bucket (cancelled or fired). */
  released(): void {
    this.watched -= 1;
    if (this.watched === 0) this.timer?.unref();
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    const delay = Math.max(1, at - Date.now());
    // setTimeout fires at once past 2^31 - 1 ms: a far deadline is approached in steps instead.
    this.timer = delay > maxTimerMs ? setTimeout(() => this.arm(at), maxTimerMs) : setTimeout(() => this.fire(at), delay);
    if (this.watched === 0) this.timer.unref();
  }

  /** The timer armed for `armedAt` fired: that bucket and every earlier one are due (a timer is never early). */
  private fire(armedAt: number): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const dueBy = Math.max(armedAt, Date.now());
    while (this.order.length > 0 && this.order[0]! <= dueBy) {
      const at = this.order.shift()!;
      const bucket = this.buckets.get(at)!;
      this.buckets.delete(at);
      for (let entry = bucket.next; entry !== bucket && entry !== undefined; entry = bucket.next) entry.expire();
    }
    // Emptied buckets ahead are dropped; the timer aims at the first that still holds a watch.
    while (this.order.length > 0) {
      const first = this.buckets.get(this.order[0]!)!;
      if (first.next !== first) break;
      this.buckets.delete(this.order.shift()!);
    }
    if (this.order.length > 0 && !this.stopped) this.arm(this.order[0]!);
  }
}

/** One pending deadline (or a bucket's sentinel): a node of its bucket's circular list. */
export class Watch {
  /** @internal */ next: Watch | undefined;
  /** @internal */ previous: Watch | undefined;

  constructor(
    private readonly wheel: DeadlineWheel,
    private readonly onExpire: (() => void) | undefined,
  ) {}

  /** @internal an empty bucket: a sentinel linked to itself. */
  static bucket(wheel: DeadlineWheel): Watch {
    const sentinel = new Watch(wheel, undefined);
    sentinel.next = sentinel;
    sentinel.previous = sentinel;
    return sentinel;
  }

  /** @internal */
  linkAfter(bucket: Watch): void {
    const last = bucket.previous!;
    this.previous = last;
    this.next = bucket;
    last.next = this;
    bucket.previous = this;
  }

  /** The deadline no longer matters (the call settled). Idempotent. */
  cancel(): void {
    if (this.unlink()) this.wheel.released();
  }

  /** @internal */
  expire(): void {
    if (!this.unlink()) return;
    this.wheel.released();
    this.onExpire?.();
  }

  private unlink(): boolean {
    const { previous, next } = this;
    if (previous === undefined || next === undefined) return false;
    previous.next = next;
    next.previous = previous;
    this.previous = undefined;
    this.next = undefined;
    return true;
  }
}

const maxTimerMs = 2 ** 31 - 1;

function insertSorted(order: number[], at: number): void {
  let index = order.length;
  while (index > 0 && order[index - 1]! > at) index -= 1;
  order.splice(index, 0, at);
}
