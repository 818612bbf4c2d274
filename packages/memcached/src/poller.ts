import { onAbort, type AcquireRequest, type AttemptResult, type Grant } from '@deadbolt/core/adapter';

/** What the poller needs from the backend: one ADD attempt, the holder's remaining lease, a release. */
export interface PollTarget {
  attempt(request: AcquireRequest): Promise<AttemptResult>;
  /** The holder's remaining lease in ms (carried in the item's flags), undefined if unknown or free. */
  holderRemainingMs(key: string): Promise<number | undefined>;
  release(grant: Grant): Promise<boolean>;
}

interface Waiter {
  readonly request: AcquireRequest;
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** Settled: by its grant, an error, its deadline or its abort (then a late grant is given back). */
  done: boolean;
  /** Made at least one attempt: a waiter whose deadline has passed still gets one (and its error). */
  attempted: boolean;
  /** Told the request the key is held (`onContended`): once, when it queues or its first attempt is refused. */
  reported: boolean;
  readonly settle: (grant: Grant | undefined, error?: unknown) => void;
}

/**
 * Polls 1 ms apart for the first 200 ms of a key's busy spell (short holds hand over within a
 * millisecond or two, as the raw add/delete loop that polls every 1 ms), then growing 10% per busy
 * answer up to 8 ms (a long hold costs at most ~125 polls/s per key per client). Growing from the
 * start would starve the waiters that have waited longest: their polls space out while a
 * newcomer's first ones are dense.
 */
const firstDelayMs = 1;
const fastSpellMs = 200;
const growth = 1.1;
const maxDelayMs = 8;
/** Ask the holder's remaining lease once the delay has grown this far (a long hold, not a hand-off). */
const askHolderAtMs = 4;

/**
 * Memcached cannot notify, so waiters poll; this makes polling cheap and orderly. A wait makes its
 * own first attempt (the head of a free key's queue tries at once) and calls `onContended` when it
 * finds the key held or queues behind local waiters.
 * - one poller per key per client: N local waiters on a key cost one ADD per poll, not N;
 * - FIFO among local waiters: only the head of the key's queue tries, and it keeps its place
 *   between polls (a fresh tryAcquire on a key with local waiters does not barge, see `busy`);
 * - adaptive backoff: polls start 1 ms apart (a hand-off between short holds is found quickly) and
 *   grow towards 8 ms while the key stays busy past 200 ms, never sleeping past the holder's lease, whose end
 *   the holder stores in the item's flags (read once the delay has grown: a long hold).
 */
export class KeyPoller {
  private readonly queues = new Map<string, Waiter[]>();

  constructor(private readonly target: PollTarget) {}

  /** True when local waiters queue for `key`: a new attempt goes behind them. */
  busy(key: string): boolean {
    return this.queues.has(key);
  }

  wait(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return new Promise<Grant | undefined>((resolve, reject) => {
      const expire = (): void => {
        // The loop settles the head after its attempt in flight (whose error, if any, is the answer).
        if (this.queues.get(request.key)?.[0] === waiter) return;
        giveUp();
      };
      const giveUp = (): void => {
        const queue = this.queues.get(request.key);
        const index = queue?.indexOf(waiter) ?? -1;
        // The head may have an attempt in flight: the loop removes it (and gives back a late grant).
        if (queue !== undefined && index > 0) queue.splice(index, 1);
        waiter.settle(undefined);
      };
      const timer = setTimeout(expire, Math.max(0, deadline - Date.now()));
      let detach: (() => void) | undefined;
      const waiter: Waiter = {
        request,
        deadline,
        signal,
        done: false,
        attempted: false,
        reported: false,
        settle: (grant, error) => {
          if (waiter.done) return;
          waiter.done = true;
          clearTimeout(timer);
          detach?.();
          if (error === undefined) resolve(grant);
          else reject(error);
        },
      };
      if (signal.aborted) return giveUp();
      // One listener per signal however many waiters share it (onAbort): a signal given to many
      // waits printed MaxListenersExceededWarning past 10.
      detach = onAbort(signal, giveUp);
      const queue = this.queues.get(request.key);
      if (queue !== undefined) {
        // Behind local waiters: the key is held (or about to be), and this waiter queues at once.
        queue.push(waiter);
        reportContended(waiter);
        return;
      }
      this.queues.set(request.key, [waiter]);
      void this.run(request.key);
    });
  }

  private async run(key: string): Promise<void> {
    const queue = this.queues.get(key)!;
    let delayMs = firstDelayMs;
    let busySince = Date.now();
    let holderEndsAt = Number.POSITIVE_INFINITY;
    while (queue.length > 0) {
      const head = queue[0]!;
      if (head.done || head.signal.aborted || (head.attempted && Date.now() >= head.deadline)) {
        queue.shift();
        head.settle(undefined);
        continue;
      }
      let result: AttemptResult;
      head.attempted = true;
      try {
        result = await this.target.attempt(head.request);
      } catch (error) {
        queue.shift();
        head.settle(undefined, error);
        continue;
      }
      if (result.acquired) {
        queue.shift();
        if (head.done || head.signal.aborted) {
          await this.target.release(result.grant).catch(() => false);
          head.settle(undefined);
        } else {
          head.settle(result.grant);
        }
        delayMs = firstDelayMs;
        busySince = Date.now();
        holderEndsAt = Number.POSITIVE_INFINITY;
        continue;
      }
      // The head's own attempt found the key held: reported before it sleeps (it is queued now).
      reportContended(head);
      if (delayMs >= askHolderAtMs && !Number.isFinite(holderEndsAt)) {
        const remaining = await this.target.holderRemainingMs(key).catch(() => undefined);
        if (remaining !== undefined) holderEndsAt = Date.now() + remaining;
      }
      const sleepMs = Math.max(1, Math.min(delayMs, head.deadline - Date.now(), holderEndsAt + 1 - Date.now()));
      await sleep(sleepMs, head);
      if (Date.now() - busySince >= fastSpellMs) delayMs = Math.min(maxDelayMs, delayMs * growth);
    }
    this.queues.delete(key);
  }
}

function reportContended(waiter: Waiter): void {
  if (waiter.reported) return;
  waiter.reported = true;
  waiter.request.onContended?.();
}

/** Resolves after `ms` or when the head's signal aborts (the loop then moves on). */
function sleep(ms: number, head: Waiter): Promise<void> {
  if (head.signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      detach();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const detach = onAbort(head.signal, done);
  });
}
