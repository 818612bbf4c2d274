import { BackendUnavailableError, withDeadline as raceDeadline } from '@deadbolt/core/adapter';

/**
 * Runs one operation against a deadline. memjs has its own socket timeout, but a connect that hangs
 * or a retry loop could outlive it; this bound is the one the user configured. Any failure, the
 * deadline's included, surfaces as BackendUnavailableError naming the key and the backend.
 */
export async function withDeadline<T>(
  operation: Promise<T>,
  timeoutMs: number,
  context: { action: string; key?: string; backend: string },
): Promise<T> {
  try {
    return await raceDeadline(operation, timeoutMs);
  } catch (cause) {
    throw new BackendUnavailableError(context.action, { key: context.key, backend: context.backend, cause });
  }
}
