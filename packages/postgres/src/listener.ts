import pg from 'pg';
import { KeyedWaiters, withDeadline } from '@deadbolt/core/adapter';
import { endClient } from './connect.js';

/**
 * One LISTEN connection per backend, shared by every waiter (a connection per waiter would exhaust
 * max_connections). Waiters register by key; a NOTIFY whose payload is the key wakes the oldest of them. If the
 * connection breaks, every waiter wakes (core re-attempts) and the next wait reconnects.
 */
export class ReleaseListener {
  private client: pg.Client | undefined;
  private ready: Promise<pg.Client> | undefined;
  /** The adapter kit's waiter set: a NOTIFY wakes the longest-waiting local waiter of its key (FIFO hand-off). */
  private readonly waiters = new KeyedWaiters();
  private closed = false;

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
      void endClient(client);
      this.waiters.wakeEverything();
    };
    client.on('error', broken);
    client.on('end', broken);
    client.on('notification', (message) => {
      if (message.channel !== this.channel || message.payload === undefined) return;
      this.waiters.wakeOne(message.payload);
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
    this.waiters.wakeEverything();
    if (client !== undefined) await endClient(client);
  }
}
