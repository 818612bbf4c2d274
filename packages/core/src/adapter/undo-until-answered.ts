import { onAbort } from './abort-fanout.js';

/**
 * The undo of an attempt the caller gave up on, retried until the server answers.
 *
 * A single try is not enough: on a frozen server the undo times out just like the attempt did, and
 * the attempt still runs when the server wakes, leaving a lease nobody holds for its whole ttl (seen
 * with SIGSTOPped and paused memcached; any adapter's single undo is defeated the same way). So the
 * undo is repeated, with a growing pause between tries (no hot loop when it fails at once), until:
 * - it answers: done. When the attempt's outcome is unknown and the answer is `false` ("nothing of
 *   this attempt found") one more try follows {@link confirmDelayMs} later: the attempt may still be
 *   queued on another socket (a reconnected client, a pool) that the server reads after the undo's;
 * - the lease's ttl has passed since the undo began (what the attempt wrote is gone by then, unless
 *   the server stayed frozen longer than that: the ttl is then the bound of the orphan);
 * - the backend closes (`closed` aborts): the pending pause is cleared, nothing outlives close().
 * Timers are unref'd: an undo in progress never keeps the process alive. Errors are swallowed.
 */

/** Pause before the first retry; doubles up to {@link maxRetryDelayMs} (jittered ±20%). */
const firstRetryDelayMs = 50;
const maxRetryDelayMs = 1_000;
/** The confirming try after a "nothing found" answer to an undo of an unknown outcome. */
export const confirmDelayMs = 500;
/** When the caller names no lease: the default ttl of a lock. */
export const defaultUndoWithinMs = 30_000;

export interface UndoBounds {
  /** Keep trying this long at most (ms): the lease's ttl. */
  readonly withinMs?: number | undefined;
  /** Aborts when the backend closes: no more tries, the pending pause is cleared. */
  readonly closed?: AbortSignal | undefined;
}

export async function undoUntilAnswered<T>(
  undo: (late: T | undefined) => Promise<unknown> | unknown,
  late: T | undefined,
  bounds: UndoBounds,
): Promise<void> {
  const until = Date.now() + (bounds.withinMs ?? defaultUndoWithinMs);
  const { closed } = bounds;
  // The operation's value is known (it resolved late): its undo's first answer is final.
  let confirmed = late !== undefined;
  for (let failures = 0; !closed?.aborted; ) {
    let answered = true;
    let answer: unknown;
    try {
      answer = await undo(late);
    } catch {
      answered = false;
    }
    if (answered && (answer !== false || confirmed)) return;
    let delayMs = confirmDelayMs;
    if (answered) confirmed = true;
    else delayMs = jittered(Math.min(maxRetryDelayMs, firstRetryDelayMs * 2 ** failures++));
    if (Date.now() + delayMs >= until) return;
    await pause(delayMs, closed);
  }
}

function jittered(ms: number): number {
  return Math.round(ms * (0.8 + Math.random() * 0.4));
}

/**
 * Resolves after `ms` or at once when `closed` aborts; the timer is unref'd and cleared either way.
 * `closed` is the backend's one close signal, shared by every pending undo: one listener behind
 * onAbort (a listener each printed MaxListenersExceededWarning past 10 undos on a frozen server).
 */
function pause(ms: number, closed: AbortSignal | undefined): Promise<void> {
  // Closed while the last try was out: no pause at all (onAbort never fires for a past abort).
  if (closed?.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      detach?.();
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref?.();
    const detach = closed === undefined ? undefined : onAbort(closed, done);
  });
}
