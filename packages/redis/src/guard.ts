import { closedError, DeadlineWheel, guardCall } from '@deadbolt/core/adapter';
import { Cluster, type Redis } from 'ioredis';
import { classifyConnectionError } from './connection-errors.js';
import { lastConnectionError } from './connections.js';

/** How long close() lets calls in flight finish (the time QUIT gets). */
export const quitTimeoutMs = 500;

/** What the guard needs of its backend. */
export interface GuardSettings {
  readonly name: string;
  /** The configured nodes, for error messages (never the URL with its password). */
  readonly endpoint: string | undefined;
  /** The bound of one call. */
  readonly deadlineMs: number;
  /** The command connections, whose own connection errors say why a command failed. */
  readonly connections: readonly (Redis | Cluster)[];
  /** RedLock fans out to several masters, and the app's connection may have no commandTimeout: a deadline of our own. */
  readonly ownDeadline: boolean;
}

/**
 * Every call of the backend goes through here, into the kit's call guard: typed errors naming the
 * key and the backend (never the URL), the undo of an attempt given up on, and close(): calls after
 * it are refused, calls in flight finish first, then whatever still waits on a frozen server gives up.
 */
export class CallGuard {
  /** Those deadlines, on one timer (the adapter kit's wheel): a timer per call showed in profiles. */
  private readonly deadlines = new DeadlineWheel();
  /** Aborted by close(): calls still waiting on a frozen server give up at once, and no timer stays. */
  private readonly closed = new AbortController();
  private closing = false;
  /**
   * The calls that `closed` would cut short (ownDeadline: the app's connection without a
   * commandTimeout), while in flight: close() lets them finish first, as QUIT does on our own
   * connections. Cut short at once, a release the app began just before closing its client failed
   * with "the backend is closed" although the server was answering it.
   */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly settings: GuardSettings) {}

  get isClosed(): boolean {
    return this.closing;
  }

  /**
   * One guarded call. `bounded` false: the operation bounds itself (a queued acquire waits up to its
   * own deadline). Only a guard with `ownDeadline` adds a timer; elsewhere ioredis' commandTimeout
   * bounds the one command (the hot path). `undo` takes back an attempt whose answer came too late
   * or never; the kit retries it until the server answers, within `undoWithinMs`, until close().
   */
  run<T>(
    action: string,
    key: string | undefined,
    operation: () => Promise<T>,
    bounded = true,
    undo?: (late: T | undefined) => Promise<unknown> | undefined,
    undoWithinMs?: number,
  ): Promise<T> {
    const { name, endpoint, deadlineMs, ownDeadline } = this.settings;
    if (this.closing) return Promise.reject(closedError(action, key, name));
    const timed = bounded && ownDeadline;
    const attempt = (): Promise<T> => operation().catch((error: unknown) => Promise.reject(this.withConnectionReason(error)));
    return guardCall(timed ? () => this.tracked(attempt()) : attempt, {
      action,
      key,
      backend: name,
      endpoint,
      timeoutMs: timed ? deadlineMs : Number.POSITIVE_INFINITY,
      deadlines: this.deadlines,
      signal: timed ? this.closed.signal : undefined,
      undo,
      undoWithinMs,
      closed: this.closed.signal,
      // Redis's refused configurations (wrong password, no AUTH, ACL) in the user's words.
      classify: classifyConnectionError,
    });
  }

  /** Refuses new calls from now on; those already sent get their answers first, within the time QUIT gets. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.inFlight.size > 0) await settledWithin([...this.inFlight], quitTimeoutMs);
    this.closed.abort(closedError('close', undefined, this.settings.name));
    this.deadlines.stop();
  }

  /**
   * ioredis rejects a command on a connection that cannot connect with "Reached the max retries per
   * request limit" (or "Connection is closed"): the connection's own error says why (refused, no
   * such host, wrong password), so that is what the caller gets.
   */
  private withConnectionReason(error: unknown): unknown {
    const generic =
      error instanceof Error &&
      (error.name === 'MaxRetriesPerRequestError' || /Connection is closed|Stream isn't writeable/.test(error.message));
    return (generic ? lastConnectionError(this.settings.connections) : undefined) ?? error;
  }

  /** Keeps `call` in `inFlight` until it settles (see close). */
  private tracked<T>(call: Promise<T>): Promise<T> {
    this.inFlight.add(call);
    const forget = (): void => {
      this.inFlight.delete(call);
    };
    call.then(forget, forget);
    return call;
  }
}

/** Resolves once every promise has settled, or after `ms`, whichever comes first (an unref'd timer, cleared). */
function settledWithin(promises: readonly Promise<unknown>[], ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    void Promise.allSettled(promises).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Whether ioredis itself bounds every command on `connection` (our connections always set it). */
export function hasCommandTimeout(connection: Redis | Cluster): boolean {
  const options = connection instanceof Cluster ? connection.options.redisOptions : connection.options;
  return typeof options?.commandTimeout === 'number';
}
