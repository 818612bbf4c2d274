/** Thrown when an operation outlives its deadline. */
export class DeadlineExceededError extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'DeadlineExceededError';
  }
}

/**
 * Rejects with DeadlineExceededError after `ms` unless `operation` settles first. The timer is always
 * cleared. The operation itself keeps running: callers that must undo a late success do so.
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
