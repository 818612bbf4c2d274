import { serverProvider } from './provider.js';
import type { ServerProviderName, StartOptions } from './types.js';

/** The provider a starter uses: its own option, else DEADBOLT_SERVERS / auto-detection. */
export async function chooseProvider(options: StartOptions | undefined): Promise<ServerProviderName> {
  return options?.provider ?? (await serverProvider());
}

/** Stops every handle even when some fail, then reports the first failure. */
export async function stopAll(handles: readonly { stop(): Promise<void> }[]): Promise<void> {
  const results = await Promise.allSettled(handles.map((handle) => handle.stop()));
  const failure = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
}

/**
 * Starts several servers at once; if any fails, the ones that started are stopped before the
 * error is rethrown, so a failed start leaks nothing.
 */
export async function startAllOrNone<T extends { stop(): Promise<void> }>(starts: readonly Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(starts);
  const failure = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failure === undefined) return results.map((result) => (result as PromiseFulfilledResult<T>).value);
  await stopAll(results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))).catch(() => undefined);
  throw failure.reason;
}

/** Waits for readiness; a server that never answers is stopped before the error propagates. */
export async function readyOrStop<T extends { waitReady(): Promise<void>; stop(): Promise<void> }>(server: T): Promise<T> {
  try {
    await server.waitReady();
    return server;
  } catch (error) {
    await server.stop().catch(() => undefined);
    throw error;
  }
}
