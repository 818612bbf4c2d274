import { isAlreadyExists } from './connect.js';

/**
 * Creates a table (or any schema object) once, lazily, on first use: `create` runs at most once at a
 * time; two backends racing on CREATE ... IF NOT EXISTS count as success; a failed attempt is
 * retried by the next call instead of being remembered. The arguments of the first call are used
 * (a key, to name in an error).
 */
export function schemaOnce<A extends unknown[]>(create: (...args: A) => Promise<unknown>): (...args: A) => Promise<void> {
  let done: Promise<void> | undefined;
  return (...args: A) => {
    done ??= create(...args).then(
      () => undefined,
      (error: unknown) => {
        if (isAlreadyExists(error) || isAlreadyExists((error as { cause?: unknown } | null)?.cause)) return;
        done = undefined;
        throw error;
      },
    );
    return done;
  };
}
