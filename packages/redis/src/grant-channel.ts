import type { Cluster, Redis } from 'ioredis';

type Subscriber = (Redis | Cluster) & {
  ssubscribe(...channels: string[]): Promise<unknown>;
};

/**
 * Fair mode's grant channels of one client, on a second socket (a connection in subscriber mode can
 * run nothing else). Standalone and Sentinel: ONE channel per client, subscribed once and kept for
 * the backend's life, so a hand-off costs one message to one socket with no per-key SUBSCRIBE churn.
 * Cluster: one shard channel per slot the client has waited on (SSUBSCRIBE, kept), because a script
 * may SPUBLISH only to a shard channel of its own slot, and a classic PUBLISH is broadcast to every
 * node over the cluster bus. ioredis re-subscribes after a reconnect; a message lost meanwhile costs
 * the waiter its re-check, never the lock (the grant is already in place).
 */
export class GrantChannel {
  private subscriber: Subscriber | undefined;
  /** After close(): nothing subscribes again, so no connection is opened behind the backend's back. */
  private closed = false;
  /** true once subscribed; the pending subscription otherwise. */
  private readonly channels = new Map<string, true | Promise<void>>();

  constructor(
    private readonly openSubscriber: () => Redis | Cluster,
    private readonly sharded: boolean,
    private readonly deliver: (token: string, fence: number) => void,
  ) {}

  /** True when `channel` is already live; else a promise that settles once it is (or failed). */
  ready(channel: string): true | Promise<void> {
    // A queue tick or a late waiter after close must not open a new subscriber connection.
    if (this.closed) return Promise.resolve();
    const state = this.channels.get(channel);
    if (state !== undefined) return state;
    const subscribing = this.subscribe(channel);
    this.channels.set(channel, subscribing);
    return subscribing;
  }

  /** Stops for good; returns the subscriber connection, if one was opened, for the caller to close. */
  close(): Redis | Cluster | undefined {
    this.closed = true;
    return this.subscriber;
  }

  private async subscribe(channel: string): Promise<void> {
    const subscriber = this.connection();
    try {
      await (this.sharded ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel));
      this.channels.set(channel, true);
    } catch {
      // The waiters' re-checks still find their grants; the next waiter tries to subscribe again.
      this.channels.delete(channel);
    }
  }

  private connection(): Subscriber {
    if (this.subscriber === undefined) {
      const subscriber = this.openSubscriber() as Subscriber;
      subscriber.on(this.sharded ? 'smessage' : 'message', (channel: string, message: string) => {
        if (this.channels.has(channel)) this.onMessage(message);
      });
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  /** "<token> <fence>", as the fair scripts' grantTo publishes it. */
  private onMessage(message: string): void {
    const space = message.lastIndexOf(' ');
    if (space > 0) this.deliver(message.slice(0, space), Number(message.slice(space + 1)));
  }
}
