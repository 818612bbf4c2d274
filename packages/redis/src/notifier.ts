import type { Cluster, Redis } from 'ioredis';

interface Waiter {
  wake(): void;
}

interface Channel {
  readonly waiters: Set<Waiter>;
  /** Settles once SUBSCRIBE was answered (or failed: the waiter's timer still bounds the wait). */
  readonly subscribed: Promise<void>;
  /** Date.now() when SUBSCRIBE was confirmed and the subscription has not dropped since. */
  subscribedAt?: number;
  /** Date.now() of the last release message received on the channel. */
  lastMessageAt?: number;
  /** Date.now() since when no one waits on it (kept subscribed for a grace period). */
  idleSince?: number;
}

/**
 * How long a channel stays subscribed after its last waiter left. A worker that loops acquire and
 * release on a busy key would otherwise pay a SUBSCRIBE and an UNSUBSCRIBE on every wait.
 */
const idleGraceMs = 5_000;

/**
 * Release notifications over ONE subscriber connection per backend, as Redisson's LockPubSub shares
 * one per connection manager: the first waiter on a key subscribes to its channel; the channel is
 * unsubscribed once no one has waited on it for a grace period. Commands on one connection run in
 * order, so a SUBSCRIBE issued after an UNSUBSCRIBE of the same channel wins.
 */
export class ReleaseNotifier {
  private readonly channels = new Map<string, Channel>();
  private subscriber: Redis | Cluster | undefined;
  private sweep: NodeJS.Timeout | undefined;
  private closed = false;

  /** `openSubscriber` is called on the first wait only: a backend that never waits opens no extra socket. */
  constructor(private readonly openSubscriber: () => Redis | Cluster) {}

  /**
   * Resolves on a message on `channel`, after `maxWaitMs`, or as soon as the lock is known to be
   * gone. Rejects only when `signal` aborts. Leaves no listener or timer behind.
   *
   * The gap between the failed attempt (sent at `attemptSentAt`) and the moment we listen is closed
   * without a round trip when the channel was already live before the attempt: a release after the
   * attempt then shows as a message at or after attemptSentAt. Otherwise `stillHeld()` is asked once
   * the new subscription is live.
   */
  wait(channel: string, maxWaitMs: number, signal: AbortSignal, stillHeld: () => Promise<boolean>, attemptSentAt?: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      if (this.closed) {
        resolve();
        return;
      }
      let done = false;
      const finish = (error?: unknown): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.leave(channel, waiter);
        if (error === undefined) resolve();
        else reject(error);
      };
      const waiter: Waiter = { wake: () => finish() };
      const onAbort = (): void => finish(signal.reason);
      const timer = setTimeout(() => finish(), maxWaitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      const entry = this.join(channel, waiter);
      if (attemptSentAt !== undefined && entry.subscribedAt !== undefined && entry.subscribedAt <= attemptSentAt) {
        if (entry.lastMessageAt !== undefined && entry.lastMessageAt >= attemptSentAt) finish();
        return;
      }
      void entry.subscribed
        .then(async () => {
          if (!done && !(await stillHeld())) finish();
        })
        .catch(() => undefined);
    });
  }

  /** Wakes every waiter (used by close). */
  wakeAll(): void {
    for (const channel of this.channels.values()) for (const waiter of [...channel.waiters]) waiter.wake();
  }

  /** Stops for good. Returns the subscriber connection, if one was opened, for the caller to close. */
  close(): Redis | Cluster | undefined {
    this.closed = true;
    clearTimeout(this.sweep);
    this.sweep = undefined;
    this.wakeAll();
    return this.subscriber;
  }

  private connection(): Redis | Cluster {
    if (this.subscriber === undefined) {
      const subscriber = this.openSubscriber();
      subscriber.on('message', (channel: string) => this.notify(channel));
      // Messages sent while the link was down are lost: no subscription counts as live until renewed.
      subscriber.on('close', () => {
        for (const entry of this.channels.values()) entry.subscribedAt = undefined;
      });
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  private notify(channel: string): void {
    const entry = this.channels.get(channel);
    if (!entry) return;
    entry.lastMessageAt = Date.now();
    for (const waiter of [...entry.waiters]) waiter.wake();
  }

  private join(channel: string, waiter: Waiter): Channel {
    let entry = this.channels.get(channel);
    if (entry === undefined) {
      const created: Channel = {
        waiters: new Set(),
        subscribed: this.connection()
          .subscribe(channel)
          .then(
            () => {
              created.subscribedAt = Date.now();
            },
            () => undefined,
          ),
      };
      entry = created;
      this.channels.set(channel, entry);
    }
    entry.waiters.add(waiter);
    entry.idleSince = undefined;
    return entry;
  }

  private leave(channel: string, waiter: Waiter): void {
    const entry = this.channels.get(channel);
    if (!entry) return;
    entry.waiters.delete(waiter);
    if (entry.waiters.size > 0) return;
    entry.idleSince = Date.now();
    this.scheduleSweep();
  }

  /** One timer for all idle channels, due when the oldest idle one is; unref'd, so a process can exit. */
  private scheduleSweep(delayMs = idleGraceMs): void {
    if (this.sweep !== undefined || this.closed) return;
    this.sweep = setTimeout(() => {
      this.sweep = undefined;
      const now = Date.now();
      let nextDue = Number.POSITIVE_INFINITY;
      for (const [name, entry] of this.channels) {
        if (entry.waiters.size > 0 || entry.idleSince === undefined) continue;
        const due = entry.idleSince + idleGraceMs;
        if (due > now) {
          nextDue = Math.min(nextDue, due);
          continue;
        }
        this.channels.delete(name);
        if (this.subscriber !== undefined) this.subscriber.unsubscribe(name).catch(() => undefined);
      }
      if (nextDue !== Number.POSITIVE_INFINITY) this.scheduleSweep(Math.max(1, nextDue - now));
    }, delayMs).unref();
  }
}
