/** Thrown when an operation against a server outlives its deadline. */
export class DeadlineExceededError extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'DeadlineExceededError';
  }
}

/**
 * Rejects with DeadlineExceededError after `ms` unless `operation` settles first; the timer is always
 * cleared. For adapters: a client library's own timeouts cover a running server, but a frozen or
 * unreachable one (SIGSTOP, a partition) needs this client-side bound. The operation itself keeps
 * running: a caller that must undo a late success does so.
 */
export async function withDeadline<T>(operation: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceededError(ms)), ms);
  });
  try {
    return await Promise.race([operation, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
