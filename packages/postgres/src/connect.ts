import pg from 'pg';
import { DeadlineExceededError, withDeadline } from '@deadbolt/core/adapter';
import type { ResolvedPostgresOptions } from './settings.js';

/**
 * The server's own dead-peer check on our sessions, in seconds (`tcp_keepalives_*`, settable by any
 * user, sent in the startup packet): an advisory lock lives on its session, and when the link of a
 * session that holds one goes silent (a NAT or firewall that forgot it), the server keeps the lock
 * until its TCP keepalive finds the peer gone, over two hours at the OS defaults. With these it
 * probes after 10 s of silence, every 5 s, and ends the session (and its locks) after 3 unanswered
 * probes: about 25 s. A live idle session costs one small packet each way per 10 s.
 */
const serverKeepalive = '-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3';

/**
 * Connection settings shared by the pool and dedicated sessions: bounded connect and statements, and
 * the server's keepalive. A connection string's own `options` (or PGOPTIONS) is kept, ahead of ours:
 * pg would let the URL's replace ours whole, so it is taken out of the URL and joined here.
 */
export function clientConfig(options: ResolvedPostgresOptions, statementTimeoutMs: number = options.statementTimeoutMs): pg.ClientConfig {
  const url = new URL(options.connectionString);
  const theirs = url.searchParams.get('options') ?? process.env['PGOPTIONS'];
  url.searchParams.delete('options');
  return {
    connectionString: url.href,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: statementTimeoutMs,
    application_name: 'deadbolt',
    keepAlive: true,
    options: theirs === undefined || theirs === '' ? serverKeepalive : `${theirs} ${serverKeepalive}`,
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
