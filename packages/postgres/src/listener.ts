import pg from 'pg';
import { withDeadline } from '@deadbolt/core/adapter';
import { endClient } from './connect.js';

interface Waiter {
  readonly wake: () => void;
}

/**
 * One LISTEN connection per backend, shared by every waiter (a connection per waiter would exhaust
 * max_connections). Waiters register by key; a NOTIFY whose payload is the key wakes them. If the
 * connection breaks, every waiter wakes (core re-attempts) and the next wait reconnects.
 */
export class ReleaseListener {
  private client: pg.Client | undefined;
  private ready: Promise<pg.Client> | undefined;
  private readonly waiters = new Map<string, Set<Waiter>>();
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
    await new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (error?: unknown): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const set = this.waiters.get(key);
        set?.delete(waiter);
        if (set?.size === 0) this.waiters.delete(key);
        if (error === undefined) resolve();
        else reject(error);
      };
      const waiter: Waiter = { wake: () => finish() };
      const onAbort = (): void => finish(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      timer = setTimeout(() => finish(), Math.max(0, maxWaitMs));
      let set = this.waiters.get(key);
      if (set === undefined) this.waiters.set(key, (set = new Set()));
      set.add(waiter);
      // Register first, then listen, then look: a release between our attempt and LISTEN is seen by isFree().
      this.listening()
        .then(() => isFree())
        .then(
          (free) => {
            if (free) finish();
          },
          () => undefined, // cannot listen: the timer bounds the wait, core polls
        );
    });
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
      for (const set of [...this.waiters.values()]) for (const waiter of [...set]) waiter.wake();
    };
    client.on('error', broken);
    client.on('end', broken);
    client.on('notification', (message) => {
      if (message.channel !== this.channel || message.payload === undefined) return;
      for (const waiter of [...(this.waiters.get(message.payload) ?? [])]) waiter.wake();
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
    for (const set of [...this.waiters.values()]) for (const waiter of [...set]) waiter.wake();
    if (client !== undefined) await endClient(client);
  }
}
