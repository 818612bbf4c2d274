import { handlersOf, onAbortBorrowed } from '../adapter/abort-fanout.js';

/**
 * An AbortController that follows the caller's signal and close()'s; `dispose` detaches it so nothing
 * leaks. Through abort-fanout.ts: one listener per signal however many acquires share it (a listener
 * each printed MaxListenersExceededWarning past 10 acquires on one signal, and cost O(n) per add).
 */
export function linkSignals(given: AbortSignal, closing: AbortSignal): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  if (given.aborted) controller.abort(given.reason);
  else if (closing.aborted) controller.abort(closing.reason);
  if (controller.signal.aborted) return { signal: controller.signal, dispose: () => undefined };
  const fromClosing = (): void => controller.abort(closing.reason);
  const closingHandlers = handlersOf(closing);
  closingHandlers.add(fromClosing);
  const detachGiven = onAbortBorrowed(given, () => controller.abort(given.reason));
  return {
    signal: controller.signal,
    dispose: () => {
      detachGiven();
      closingHandlers.delete(fromClosing);
    },
  };
}

/** The error an aborted lease's signal carries, if it carries one. */
export function lostReason(signal: AbortSignal): Error | undefined {
  return signal.reason instanceof Error ? signal.reason : undefined;
}
