/**
 * One 'abort' listener per signal, fanning out to a Set, as the adapter kit's call guard does:
 * every queued fair waiter of one client listens on the same signal (the client's close), and an
 * EventTarget add/removeEventListener pair per waiter showed in the contended fair profile (each
 * call scans the signal's listener list; a Set add and delete do not).
 */
const handlers = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `handler` once when `signal` aborts, unless it is removed first. The signal must not be aborted yet. */
export function addAbortHandler(signal: AbortSignal, handler: () => void): void {
  let set = handlers.get(signal);
  if (set === undefined) {
    const created = new Set<() => void>();
    set = created;
    handlers.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        handlers.delete(signal);
        for (const each of [...created]) each();
      },
      { once: true },
    );
  }
  set.add(handler);
}

export function removeAbortHandler(signal: AbortSignal, handler: () => void): void {
  handlers.get(signal)?.delete(handler);
}
