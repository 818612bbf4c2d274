import { withDeadline } from '@deadbolt/core/adapter';
import pg from 'pg';
import { endClient } from './connect.js';

/**
 * One PostgreSQL connection of our own, outside any pool: the advisory mode's sessions (a session
 * lock lives and dies with its session), an election term's session, the LISTEN session. Its
 * lifecycle is the same everywhere: connect within a deadline (optionally preparing it, which reads
 * the fence epoch), then either an end on purpose (`end`: nothing is reported) or a loss (`lose`, or
 * the server or the link ending it: `onLost` is told once, with the cause). Either way the socket is
 * ended within a bound, so nothing leaks.
 */
export class DedicatedSession {
  readonly client: pg.Client;
  /** The fence epoch read by `prepare` at connect (0 until then). */
  epoch = 0;
  private over = false;

  constructor(
    config: pg.ClientConfig,
    private readonly onLost?: (cause: Error) => void,
    /** The cause reported when the connection closes under us without an error. */
    closedMessage = 'the connection closed',
  ) {
    this.client = new pg.Client(config);
    this.client.on('error', (error: Error) => void this.lose(error));
    this.client.on('end', () => void this.lose(new Error(closedMessage)));
  }

  /** True once the session ended, on purpose or not: it must be given no more work. */
  get ended(): boolean {
    return this.over;
  }

  /** The server process serving this session (for pg_cancel_backend), once connected. */
  get pid(): number | undefined {
    return (this.client as unknown as { processID?: number }).processID;
  }

  /**
   * Connects (bounded by `connectMs`, when given) and runs `prepare` on the new session (bounded by
   * `prepareMs`), whose answer is the epoch. On failure the session is ended quietly and the error
   * rethrown.
   */
  async open(
    bounds: { readonly connectMs?: number; readonly prepareMs?: number } = {},
    prepare?: (client: pg.Client) => Promise<number>,
  ): Promise<void> {
    try {
      await bounded(this.client.connect(), bounds.connectMs);
      if (prepare !== undefined) this.epoch = await bounded(prepare(this.client), bounds.prepareMs);
    } catch (error) {
      void this.end();
      throw error;
    }
  }

  /** Ends the session on purpose: what it holds goes with it and nothing is reported lost. */
  end(ms?: number): Promise<void> {
    this.over = true;
    return endClient(this.client, ms);
  }

  /** Ends the session as lost: `onLost` is told once (a session that already ended is left alone). */
  lose(cause: Error): Promise<void> {
    if (this.over) return Promise.resolve();
    this.over = true;
    const ending = endClient(this.client);
    this.onLost?.(cause);
    return ending;
  }
}

function bounded<T>(promise: Promise<T>, ms: number | undefined): Promise<T> {
  return ms === undefined ? promise : withDeadline(promise, ms);
}
