/** The signals an operator or a supervisor sends to stop a command: deadbolt passes them on. */
export const relayedSignals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Catches SIGINT, SIGTERM and SIGHUP from the moment it is created, so none of them kills deadbolt
 * while it holds a lock (the lock would stay taken until its lease ran out). Before the command
 * runs, a signal aborts `signal` (the wait for the lock ends); once it runs, each one is forwarded.
 */
export class SignalRelay implements Disposable {
  private readonly controller = new AbortController();
  private target: ((signal: NodeJS.Signals) => void) | undefined;
  /** The first signal received, if any: the exit code is 128 + its number when nothing else ran. */
  received: NodeJS.Signals | undefined;

  private readonly onSignal = (signal: NodeJS.Signals): void => {
    this.received ??= signal;
    if (this.target) this.target(signal);
    else this.controller.abort(new Error(`interrupted by ${signal}`));
  };

  constructor() {
    for (const name of relayedSignals) process.on(name, this.onSignal);
  }

  /** Aborts on the first signal received before forwarding starts. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** From now on every signal goes to `target` (the running command). */
  forwardTo(target: (signal: NodeJS.Signals) => void): void {
    this.target = target;
  }

  [Symbol.dispose](): void {
    for (const name of relayedSignals) process.off(name, this.onSignal);
  }
}
