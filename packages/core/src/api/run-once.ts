/** Options of `client.runOnce`. Unknown keys are rejected. */
export interface RunOnceOptions {
  /**
   * The name stays taken at least this long from the run's start (ms, integer >= 0), even when `fn`
   * ends sooner or the process exits: a lease on the server's clock. Cover the replicas' clock skew
   * plus the scheduler's jitter with it, so a replica that fires the same tick a little late finds the
   * name still taken.
   */
  readonly lockAtLeastForMs: number;
  /**
   * The longest the name stays taken (ms, integer > 0, >= lockAtLeastForMs): a crashed winner frees
   * it then, and `fn`'s signal aborts then.
   */
  readonly lockAtMostForMs: number;
  /** Aborts `fn`'s signal. Before the claim: runOnce rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Who runs, as `lastRun` reports it. Default: the client's id. */
  readonly runner?: string;
}

/** What the winner's `fn` gets. */
export interface RunContext {
  /** Aborts at lockAtMostForMs, on the caller's signal, and on close(). Pass it to the work. */
  readonly signal: AbortSignal;
  /** The claim's fencing token where the backend fences; else undefined. */
  readonly fence: number | undefined;
}

/** The answer of `client.runOnce`: the winner's value, or that someone else ran (or runs) the job. */
export type RunOnceResult<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

/** How a run ended ('running' while it runs, or when its runner died before it could say). */
export type RunOutcome = 'running' | 'ok' | 'failed' | 'aborted';

/** The record of a job's last run, kept on the server beside its lock (`client.lastRun`). */
export interface LastRun {
  /** The `runner` option of the run, or its client's id. */
  readonly runner: string;
  /** When `fn` started, by the runner's clock. */
  readonly startedAt: Date;
  /** When `fn` settled, by the runner's clock; undefined while running. */
  readonly finishedAt: Date | undefined;
  /** The claim's fencing token where the backend fences. */
  readonly fence: number | undefined;
  readonly outcome: RunOutcome;
  /** The error's message when the outcome is 'failed' or 'aborted' (never its stack). */
  readonly error?: string;
}
