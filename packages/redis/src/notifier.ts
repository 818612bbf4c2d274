import type { Cluster, Redis } from 'ioredis';

interface Waiter {
  wake(): void;
}

interface Channel {
  readonly waiters: Set<Waiter>;
  /** Settles once SUBSCRIBE was answered (or failed: the waiter's timer still bounds the wait). */
  readonly subscribed: Promise<void>;
}

/**
 * Release notifications over ONE subscriber connection per backend, as Redisson's LockPubSub shares
 * one per connection manager: the first waiter on a key subscribes to its channel, the last one to
 * leave unsubscribes. Commands on one connection run in order, so a SUBSCRIBE issued after an
 * UNSUBSCRIBE of the same channel wins.
 */
export class ReleaseNotifier {
  private readonly channels = new Map<string, Channel>();
  private subscriber: Redis | Cluster | undefined;
  private closed = false;

  /** `openSubscriber` is called on the first wait only: a backend that never waits opens no extra socket. */
  constructor(private readonly openSubscriber: () => Redis | Cluster) {}

  /**
   * Resolves on a message on `channel`, after `maxWaitMs`, or as soon as `stillHeld()` (asked once
   * the subscription is live, to close the gap between the failed attempt and the subscription)
   * says the lock is gone. Rejects only when `signal` aborts. Leaves no listener or timer behind.
   */
  wait(channel: string, maxWaitMs: number, signal: AbortSignal, stillHeld: () => Promise<boolean>): Promise<void> {
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
      const subscribed = this.join(channel, waiter);
      void subscribed
        .then(async () => {
          if (!done && !(await stillHeld())) finish();
        })
        .catch(() => undefined);
    });
  }

  /** Wakes every waiter (used by close) and drops the subscriber connection reference. */
  wakeAll(): void {
    for (const channel of this.channels.values()) for (const waiter of [...channel.waiters]) waiter.wake();
  }

  /** Stops for good. Returns the subscriber connection, if one was opened, for the caller to close. */
  close(): Redis | Cluster | undefined {
    this.closed = true;
    this.wakeAll();
    return this.subscriber;
  }

  private connection(): Redis | Cluster {
    if (this.subscriber === undefined) {
      const subscriber = this.openSubscriber();
      subscriber.on('message', (channel: string) => this.notify(channel));
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  private notify(channel: string): void {
    const entry = this.channels.get(channel);
    if (entry) for (const waiter of [...entry.waiters]) waiter.wake();
  }

  private join(channel: string, waiter: Waiter): Promise<void> {
    let entry = this.channels.get(channel);
    if (entry === undefined) {
      const subscribed = this.connection()
        .subscribe(channel)
        .then(
          () => undefined,
          () => undefined,
        );
      entry = { waiters: new Set(), subscribed };
      this.channels.set(channel, entry);
    }
    entry.waiters.add(waiter);
    return entry.subscribed;
  }

  private leave(channel: string, waiter: Waiter): void {
    const entry = this.channels.get(channel);
    if (!entry) return;
    entry.waiters.delete(waiter);
    if (entry.waiters.size > 0) return;
    this.channels.delete(channel);
    if (!this.closed && this.subscriber !== undefined) this.subscriber.unsubscribe(channel).catch(() => undefined);
  }
}
