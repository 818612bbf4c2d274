import { BackendUnavailableError } from '@deadbolt/core';

/**
 * Runs one operation against a deadline. memjs has its own socket timeout, but a connect that hangs
 * or a retry loop could outlive it; this bound is the one the user configured, and the timer is
 * cleared either way so nothing leaks.
 */
export async function withDeadline<T>(operation: Promise<T>, timeoutMs: number, context: { action: string; key?: string; backend: string }): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([operation, expired]);
  } catch (cause) {
    throw new BackendUnavailableError(context.action, { key: context.key, backend: context.backend, cause });
  } finally {
    clearTimeout(timer);
  }
}
