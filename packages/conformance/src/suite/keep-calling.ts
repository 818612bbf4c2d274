import { BackendUnavailableError } from '@deadbolt/core';
import type { AcquireRequest, LockBackend } from '@deadbolt/core/adapter';

/**
 * Starts `call` every `everyMs` (without waiting for the previous one: traffic that keeps coming,
 * as a renewal tick or a poller makes it) until one resolves `true` or `withinMs` passes, then waits
 * for every call to settle. Resolves the ms from the start to that first `true`, or undefined.
 * A typed unavailability (BackendUnavailableError) is "not yet"; any other error rejects.
 * For tests of a link that went silent (the TCP proxy's strand()): how soon does a call get through?
 */
export async function firstTrueWhileCalling(call: () => Promise<boolean>, everyMs: number, withinMs: number): Promise<number | undefined> {
  const startedAt = Date.now();
  let answeredAt: number | undefined;
  const calls: Promise<void>[] = [];
  while (answeredAt === undefined && Date.now() - startedAt < withinMs) {
    calls.push(
      call().then(
        (answer) => {
          if (answer) answeredAt ??= Date.now();
        },
        (error: unknown) => {
          if (!(error instanceof BackendUnavailableError)) throw error;
        },
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  await Promise.all(calls);
  return answeredAt === undefined ? undefined : answeredAt - startedAt;
}

/**
 * A call for firstTrueWhileCalling: each one tries a key never tried before (`request(n)`, n = 0, 1,
 * ...), gives it back when it got it, and answers whether it got it. New keys, so a grant the
 * server applied but never answered (a silent link) cannot make a later try busy.
 */
export function takesFreshKey(
  backend: Pick<LockBackend, 'tryAcquire' | 'release'>,
  request: (n: number) => AcquireRequest,
): () => Promise<boolean> {
  let tries = 0;
  return async () => {
    const attempt = await backend.tryAcquire(request(tries++));
    if (attempt.acquired) await backend.release(attempt.grant);
    return attempt.acquired;
  };
}
