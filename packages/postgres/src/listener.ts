import pg from 'pg';
import { KeyedWaiters, withDeadline } from '@deadbolt/core/adapter';
import { endClient } from './connect.js';

/** The client's own grant channel (lease mode's queue): one channel per client, never per key. */
export interface GrantSubscription {
  readonly channel: string;
  /** A grant message: the payload the server's grant function sent ("<token> <fence>"). */
  onGrant(payload: string): void;
  /** The connection broke: messages may have been missed, so every waiter re-checks. */
  onBroken(): void;
}

/**
 * One LISTEN connection per backend, shared by every waiter (a connection per waiter would exhaust
 * max_connections). Waiters register by key; a NOTIFY whose payload is the key wakes the oldest of them. If the
 * connection breaks, every waiter wakes (core re-attempts) and the next wait reconnects. The same
 * connection also LISTENs on the client's grant channel when the lease queue subscribes.
 */
export class ReleaseListener {
  private client: pg.Client | undefined;
  private ready: Promise<pg.Client> | undefined;
  /** The adapter kit's waiter set: a NOTIFY wakes the longest-waiting local waiter of its key (FIFO hand-off). */
  private readonly waiters = new KeyedWaiters();
  private closed = false;
  private grants: GrantSubscription | undefined;
  /** The client whose LISTEN of the grant channel has succeeded. */
  private grantsOn: pg.Client | undefined;
  private grantsListening: Promise<void> | undefined;
  /** Test support: grant messages are dropped from now on (the socket stays up). */
  dropGrants = false;

  constructor(
    private readonly open: () => pg.Client,
    private readonly channel: string,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Resolves on a release of `key`, after `maxWaitMs`, or at once if `isFree()` (asked only once
   * LISTEN is active) says the lock is already free. Rejects only on abort.
   */
  async wait(key: string, maxWaitMs: number, signal: AbortSignal, isFree: () => Promise<boolean>): Promise<void> {
    signal.throwIfAborted();
    // Register first, then listen, then look: a release between our attempt and LISTEN is seen by
    // isFree(). Cannot listen: the timer bounds the wait, core polls.
    await this.waiters.wait(key, Math.max(0, maxWaitMs), signal, () => this.listening().then(isFree));
  }

  /** Registers the grant channel (once); LISTEN happens on the next grantsReady(). */
  subscribeGrants(subscription: GrantSubscription): void {
    this.grants ??= subscription;
  }

  /**
   * True when the grant channel is being listened to now; otherwise a promise settled once it is
   * (or once that failed: the waiter's re-checks still find its grant).
   */
  grantsReady(): true | Promise<void> {
    if (this.grants === undefined) return Promise.resolve();
    if (this.grantsOn !== undefined && this.grantsOn === this.client) return true;
    this.grantsListening ??= this.listening()
      .then(async (client) => {
        if (this.grantsOn === client) return;
        await withDeadline(client.query(`LISTEN "${this.grants!.channel}"`), this.timeoutMs);
        if (this.client === client) this.grantsOn = client;
      })
      .catch(() => undefined)
      .finally(() => {
        this.grantsListening = undefined;
      });
    return this.grantsListening;
  }

  private listening(): Promise<pg.Client> {
    if (this.closed) return Promise.reject(new Error('closed'));
    this.ready ??= this.connect();
    return this.ready;
  }

  private async connect(): Promise<pg.Client> {
    const client = this.open();
    this.client = client;
    const broken = (): void => {
      if (this.client !== client) return;
      this.client = undefined;
      this.ready = undefined;
      this.grantsOn = undefined;
      void endClient(client);
      this.waiters.wakeEverything();
      this.grants?.onBroken();
    };
    client.on('error', broken);
    client.on('end', broken);
    client.on('notification', (message) => {
      if (message.payload === undefined) return;
      if (message.channel === this.channel) this.waiters.wakeOne(message.payload);
      else if (message.channel === this.grants?.channel && !this.dropGrants) this.grants.onGrant(message.payload);
    });
    try {
      await withDeadline(client.connect(), this.timeoutMs);
      await withDeadline(client.query(`LISTEN ${this.channel}`), this.timeoutMs);
      return client;
    } catch (error) {
      broken();
      throw error;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    this.ready = undefined;
    this.grantsOn = undefined;
    this.waiters.wakeEverything();
    if (client !== undefined) await endClient(client);
  }

  /** Test support (a killed process): the socket is dropped with no goodbye, nothing is woken. */
  crash(): void {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    this.ready = undefined;
    this.grants = undefined;
    (client as unknown as { connection?: { stream?: { destroy(): void } } } | undefined)?.connection?.stream?.destroy();
  }
}
