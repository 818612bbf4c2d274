import type { AcquireRequest, AttemptResult, Grant, HoldDriver } from '@deadbolt/core/adapter';
import type { CallGuard } from './guard.js';
import type { LockMode, NativeAcquire } from './modes/mode.js';
import type { TokenSource } from './token.js';

/**
 * The guarded driver of the holds one mode issues (the mutex's, or the fair kinds'): every call
 * through the call guard, and each attempt given up on undone by its own token.
 */
export function holdDriver(mode: LockMode, guard: CallGuard, tokens: TokenSource, acquire?: NativeAcquire): HoldDriver {
  const driver: HoldDriver = {
    tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
      const token = mode.tokenFor?.(request) ?? tokens.next();
      return guard.run(
        'acquire',
        request.key,
        () => mode.tryAcquire(request, token),
        true,
        (late) => {
          // Given up on (a frozen server answers after ioredis' command timeout, or never): the script
          // may still run when the server wakes. Undo this attempt's token; on the same connection the
          // undo runs after the attempt, so no lease is left for the whole ttl.
          if (late === undefined) return mode.undoAcquire?.(request, token);
          if (late.acquired) return mode.release(late.grant);
        },
        request.ttlMs,
      );
    },
    renew: (grant: Grant, ttlMs: number) => guard.run('renew', grant.key, () => mode.renew(grant, ttlMs)),
    renewMany: (grants: readonly Grant[], ttlMs: readonly number[]) =>
      grants.length === 0
        ? Promise.resolve([])
        : guard.run('renew', grants.length === 1 ? grants[0]!.key : undefined, () => mode.renewMany(grants, ttlMs)),
    release: (grant: Grant) => guard.run('release', grant.key, () => mode.release(grant)),
    validate: (grant: Grant) => guard.run('validate', grant.key, () => mode.validate(grant)),
  };
  if (acquire !== undefined)
    driver.acquire = (request, deadline, signal) => guard.run('acquire', request.key, () => acquire(request, deadline, signal), false);
  return driver;
}
