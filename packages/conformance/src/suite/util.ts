/** Resolves after `ms`: used only to let time pass in lease cases, never to synchronise. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` every `stepMs` until it returns true or the deadline passes; returns the outcome. */
export async function waitUntil(probe: () => boolean | Promise<boolean>, deadlineMs: number, stepMs = 20): Promise<boolean> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() >= end) return false;
    await delay(stepMs);
  }
}

/** Resolves when the signal aborts, or rejects after `deadlineMs`. */
export function aborted(signal: AbortSignal, deadlineMs: number): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`signal did not abort within ${deadlineMs} ms`)), deadlineMs);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** Rejects with a clear message if `promise` takes longer than `ms`: the suite's no-hang check. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms (hang)`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The error a promise rejects with (fails if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection, but the promise resolved');
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}
