import pg from 'pg';
import { DeadlineExceededError, withDeadline } from '@deadbolt/core/adapter';
import type { ResolvedPostgresOptions } from './options.js';

/** Connection settings shared by the pool and dedicated sessions: bounded connect and statements. */
export function clientConfig(options: ResolvedPostgresOptions, statementTimeoutMs: number = options.statementTimeoutMs): pg.ClientConfig {
  return {
    connectionString: options.connectionString,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: statementTimeoutMs,
    application_name: 'deadbolt',
    keepAlive: true,
  };
}

/** Ends a client without ever waiting longer than `ms` (end() can stall on a frozen server). */
export async function endClient(client: pg.Client, ms = 500): Promise<void> {
  await withDeadline(client.end(), ms).catch(() => {
    // A stalled socket: drop it so nothing leaks.
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  });
}

/** Postgres SQLSTATEs that mean "that object already exists" (concurrent CREATE ... IF NOT EXISTS races). */
export function isAlreadyExists(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '42P07' || code === '23505' || code === '42710';
}

/**
 * Bounds concurrent statements to the pool size, so that pg-pool never queues a request: pg-pool's
 * connectionTimeoutMillis counts queue time too, which would turn a burst of 10 000 releases into
 * false "server unavailable" errors. Here the statement deadline starts once a slot is ours, and time
 * spent queued is bounded separately by `queueMs`.
 */
export class Gate {
  private active = 0;
  private readonly queue: Array<() => void> = [];

  constructor(
    private readonly size: number,
    private readonly queueMs: number,
  ) {}

  async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.active >= this.size) await this.enter();
    else this.active += 1;
    try {
      return await operation();
    } finally {
      const next = this.queue.shift();
      if (next !== undefined) next();
      else this.active -= 1;
    }
  }

  private enter(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const admit = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const index = this.queue.indexOf(admit);
        if (index >= 0) this.queue.splice(index, 1);
        reject(new DeadlineExceededError(this.queueMs));
      }, this.queueMs);
      this.queue.push(admit);
    });
  }
}
