import { KeyedWaiters } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';

/**
 * Release notifications over ONE subscriber connection per backend, as Redisson's LockPubSub shares
 * one per connection manager: the first waiter on a channel subscribes, the last one to leave
 * unsubscribes. Commands on one connection run in order, so a SUBSCRIBE issued after an
 * UNSUBSCRIBE of the same channel wins. A message wakes ONE local waiter, the longest waiting (the
 * adapter kit's KeyedWaiters): waking all made every release cost one attempt per waiter, and
 * 1,000 waiters on one key took 45 s. Waiters in other processes get the same message.
 */
export class ReleaseNotifier {
  private readonly waiters = new KeyedWaiters({
    onFirst: (channel) => this.subscribe(channel),
    onEmpty: (channel) => this.unsubscribe(channel),
  });
  /** Per channel with waiters: settles once SUBSCRIBE was answered (or failed: timers bound the wait). */
  private readonly subscribed = new Map<string, Promise<void>>();
  private subscriber: Redis | Cluster | undefined;
  private closed = false;

  /** `openSubscriber` is called on the first wait only: a backend that never waits opens no extra socket. */
  constructor(private readonly openSubscriber: () => Redis | Cluster) {}

  /**
   * Resolves on a message on `channel` (if this waiter is the one it wakes), after `maxWaitMs`, or as
   * soon as `stillHeld()` (asked once the subscription is live, to close the gap between the failed
   * attempt and the subscription) says the lock is gone. Rejects only when `signal` aborts.
   */
  wait(channel: string, maxWaitMs: number, signal: AbortSignal, stillHeld: () => Promise<boolean>): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.closed) return Promise.resolve();
    return this.waiters.wait(channel, maxWaitMs, signal, async () => {
      await this.subscribed.get(channel);
      return !(await stillHeld());
    });
  }

  /** Wakes every waiter (used by close). */
  wakeAll(): void {
    this.waiters.wakeEverything();
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
      subscriber.on('message', (channel: string) => this.waiters.wakeOne(channel));
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  private subscribe(channel: string): void {
    const subscribed = this.connection()
      .subscribe(channel)
      .then(
        () => undefined,
        () => undefined,
      );
    this.subscribed.set(channel, subscribed);
  }

  private unsubscribe(channel: string): void {
    this.subscribed.delete(channel);
    if (!this.closed && this.subscriber !== undefined) this.subscriber.unsubscribe(channel).catch(() => undefined);
  }
}
