const signalPrototype = AbortSignal.prototype;
const readAborted = Object.getOwnPropertyDescriptor(signalPrototype, 'aborted')!.get!;
const readReason = Object.getOwnPropertyDescriptor(signalPrototype, 'reason')!.get!;
const throwIfAborted = signalPrototype.throwIfAborted;

/**
 * Makes the state a caller reads from `signal` true to the clock: `aborted`, `reason` and
 * `throwIfAborted()` first run `check`, which aborts the signal when the lease it stands for has run
 * out. Without it a saved signal said "held" after a stall past the lease (a GC pause, a blocked
 * event loop) until the renewer's timer got to run, and the write the caller guarded went through.
 * Own properties shadow the prototype's, so only the objects handed out pay for the check; Node's
 * internals read the internal state, and 'abort' listeners still run only when something aborts it.
 */
export function checkedOnRead(signal: AbortSignal, check: () => void): AbortSignal {
  Object.defineProperties(signal, {
    aborted: {
      configurable: true,
      get(this: AbortSignal): boolean {
        check();
        return readAborted.call(this) as boolean;
      },
    },
    reason: {
      configurable: true,
      get(this: AbortSignal): unknown {
        check();
        return readReason.call(this);
      },
    },
    throwIfAborted: {
      configurable: true,
      writable: true,
      value(this: AbortSignal): void {
        check();
        throwIfAborted.call(this);
      },
    },
  });
  return signal;
}
