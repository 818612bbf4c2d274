import type { Cluster, Redis } from 'ioredis';

/**
 * Fair mode's one grant channel per client: subscribed ONCE on a second socket (a connection in
 * subscriber mode can run nothing else) and kept for the backend's life, so a hand-off costs one
 * message to one socket with no per-key SUBSCRIBE churn. ioredis re-subscribes after a reconnect;
 * a message lost meanwhile costs the waiter its re-check, never the lock (the grant is in place).
 */
export class GrantChannel {
  private subscriber: Redis | Cluster | undefined;
  private subscribing: Promise<void> | undefined;
  private live = false;

  constructor(
    private readonly openSubscriber: () => Redis | Cluster,
    readonly channel: string,
    private readonly deliver: (token: string, fence: number) => void,
  ) {}

  /** True when the subscription is already live; else a promise that settles once it is (or failed). */
  ready(): true | Promise<void> {
    if (this.live) return true;
    this.subscribing ??= this.subscribe();
    return this.subscribing;
  }

  /** Stops for good; returns the subscriber connection, if one was opened, for the caller to close. */
  close(): Redis | Cluster | undefined {
    return this.subscriber;
  }

  private async subscribe(): Promise<void> {
    let subscriber = this.subscriber;
    if (subscriber === undefined) {
      subscriber = this.openSubscriber();
      this.subscriber = subscriber;
      subscriber.on('message', (channel: string, message: string) => {
        if (channel === this.channel) this.onMessage(message);
      });
    }
    try {
      await subscriber.subscribe(this.channel);
      this.live = true;
    } catch {
      // The waiters' re-checks still find their grants; the next waiter tries to subscribe again.
      this.subscribing = undefined;
    }
  }

  /** "<token> <fence>", as the fair scripts' grantTo publishes it. */
  private onMessage(message: string): void {
    const space = message.lastIndexOf(' ');
    if (space > 0) this.deliver(message.slice(0, space), Number(message.slice(space + 1)));
  }
}
