import { DeadlineExceededError } from '../deadline.js';
import { BackendUnavailableError, DeadboltError } from '../errors.js';
import { explainConnectionError, type ConnectionErrorClassifier } from './connection-errors.js';
import { undoUntilAnswered } from './undo-until-answered.js';
import { handlersOf } from './abort-fanout.js';
import type { DeadlineWheel, Watch } from './deadline-wheel.js';

/** What one guarded call is, for the typed error it may become. Never a URL or a credential. */
export interface GuardedCall<T> {
  /** 'acquire', 'renew', 'release', 'wait': named in the error message. */
  readonly action: string;
  readonly key?: string | undefined;
  /** `LockBackend.name`. */
  readonly backend: string;
  /** Where the backend connects (`LockBackend.endpoint`): connection failures name it. */
  readonly endpoint?: string | undefined;
  /** Give up after this many ms (the adapter's command or statement timeout plus a little slack); Infinity: no timer. */
  readonly timeoutMs: number;
  /** Bound the call on this shared wheel instead of a timer of its own (hot paths: see deadline-wheel.ts). */
  readonly deadlines?: DeadlineWheel | undefined;
  /** Gives up at once (a closing backend): no timer outlives close(). The reason, typed as above, is the error. */
  readonly signal?: AbortSignal | undefined;
  /**
   * Best-effort undo of an effect the caller never learns about (issue 14: a SET NX sent to a frozen
   * server runs when it wakes, leaving a lease nobody holds). Called at most once:
   * - with the late value, when the guard gave up (deadline, abort) and the operation then resolved;
   * - with undefined, when the operation failed (a client-side timeout, a dropped connection) or the
   *   guard gave up and it then failed: the server may or may not have run it.
   * An acquire's undo deletes its own attempt's token (compare-and-delete), so it is safe whether or
   * not the attempt ran, and safe to repeat; on a single ordered connection it queues behind the
   * attempt it undoes. The guard retries it until it answers (a frozen server times the undo out as
   * well, then runs the attempt on wake; see undo-until-answered.ts), bounded by `undoWithinMs` and
   * by `closed`. An undo that resolves `false` ("nothing of this attempt found") after an unknown
   * outcome is tried once more: the attempt may still be queued on another socket.
   * Errors of the undo are swallowed: it is tidying up, and the lease's ttl still bounds the orphan.
   */
  readonly undo?: ((late: T | undefined) => Promise<unknown> | void) | undefined;
  /** How long the undo is retried at most: the attempt's lease ttl (default 30 s, the default ttl). */
  readonly undoWithinMs?: number | undefined;
  /** The backend's close: stops the undo's retries and clears their timer. Default: `signal`. */
  readonly closed?: AbortSignal | undefined;
  /**
   * Called once when the deadline passes with no answer, after the call has failed with its typed
   * error: the adapter may drop a connection that went silent, where its client library would go
   * on sending into it (memjs times a socket out only after a pause in its traffic, so a steady
   * stream of calls kept a dead connection forever). Errors it throws are ignored.
   */
  readonly onDeadline?: (() => void) | undefined;
  /**
   * The adapter's reading of its driver's connection errors (SQLSTATEs, reply prefixes): which
   * failures are a refused configuration and which an unreachable server (connection-errors.ts).
   */
  readonly classify?: ConnectionErrorClassifier | undefined;
}

/**
 * The one call guard of the adapter kit: a deadline under every server call, every failure mapped
 * to a typed DeadboltError naming the action, key and backend (BackendUnavailableError unless it
 * already is one, or the abort signal's own reason), and the undo of a grant that lands after the
 * caller gave up. Core wraps backend calls in it as a safety net; adapters wrap their server calls.
 */
export function guardCall<T>(operation: () => Promise<T>, call: GuardedCall<T>): Promise<T> {
  const { signal, undo } = call;
  if (signal?.aborted) return Promise.reject(signal.reason);
  let pending: Promise<T>;
  try {
    pending = operation();
  } catch (error) {
    return Promise.reject(typed(error, call));
  }
  if (signal === undefined && !Number.isFinite(call.timeoutMs)) {
    // Nothing can make us give up first: the operation's own outcome, typed (no wrapper promise).
    return pending.then(undefined, (error: unknown) => {
      runUndo(undo, undefined, call); // failed: whether the server ran it is unknown
      throw typed(error, call);
    });
  }
  return new Promise<T>((resolve, reject) => {
    const guard = new Guard(call, resolve, reject);
    pending.then(
      (value) => guard.settle(value),
      (error: unknown) => guard.fail(error),
    );
  });
}

/**
 * One guarded call in flight: its deadline and its abort handler, settled once. A class rather than
 * a closure per step: every core call of an uncontended acquire and release passes here.
 */
class Guard<T> {
  private settled = false;
  private readonly watch: Watch | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  /** One shared listener per signal (abort-fanout.ts): a client's close signal is on every call in flight. */
  private readonly abortHandlers: Set<() => void> | undefined;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    private readonly call: GuardedCall<T>,
    private readonly resolve: (value: T) => void,
    private readonly reject: (reason: unknown) => void,
  ) {
    // An infinite deadline: the operation bounds itself (a client library's own command timeout).
    if (Number.isFinite(call.timeoutMs)) {
      const expire = (): void => {
        if (!this.giveUp(typed(new DeadlineExceededError(call.timeoutMs), call))) return;
        try {
          call.onDeadline?.();
        } catch {
          // best effort: the call has already failed with its typed error
        }
      };
      if (call.deadlines !== undefined) this.watch = call.deadlines.watch(call.timeoutMs, expire);
      else this.timer = setTimeout(expire, call.timeoutMs);
    }
    const { signal } = call;
    if (signal !== undefined) {
      const onAbort = (): void => {
        this.giveUp(typed(signal.reason, call));
      };
      this.onAbort = onAbort;
      this.abortHandlers = handlersOf(signal);
      this.abortHandlers.add(onAbort);
    }
  }

  settle(value: T): void {
    if (this.finish()) this.resolve(value);
    else runUndo(this.call.undo, value, this.call); // we gave up first: the caller will never see this value
  }

  fail(error: unknown): void {
    const first = this.finish();
    runUndo(this.call.undo, undefined, this.call); // failed: whether the server ran it is unknown
    if (first) this.reject(typed(error, this.call));
  }

  /** Fails the call with `reason` unless it has settled already; true when it did. */
  private giveUp(reason: unknown): boolean {
    if (!this.finish()) return false;
    this.reject(reason);
    return true;
  }

  private finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.watch !== undefined) this.watch.cancel();
    else if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.onAbort !== undefined) this.abortHandlers?.delete(this.onAbort);
    return true;
  }
}

function runUndo<T>(undo: GuardedCall<T>['undo'], late: T | undefined, call: GuardedCall<T>): void {
  if (undo === undefined) return;
  // best effort, retried until the server answers; the ttl bounds what is left
  void undoUntilAnswered(undo, late, { withinMs: call.undoWithinMs, closed: call.closed ?? call.signal }).catch(() => undefined);
}

/** A DeadboltError (or an AbortError / TimeoutError) as it is; anything else as BackendUnavailableError. */
function typed(error: unknown, call: Pick<GuardedCall<never>, 'action' | 'key' | 'backend' | 'endpoint' | 'signal' | 'classify'>): unknown {
  if (error instanceof DeadboltError) return error;
  const explained = explainConnectionError(error, call, call.classify);
  if (explained !== undefined) return explained;
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return error;
  return new BackendUnavailableError(call.action, { key: call.key, backend: call.backend, cause: error });
}
