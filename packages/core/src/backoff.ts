/**
 * Capped exponential backoff with jitter for backends that cannot notify waiters. Seed 000 retried
 * after a random 50-300 ms; a fixed random window wastes time when the lock is released quickly and
 * hammers the server when it is not, so the window doubles from `baseMs` up to `capMs`, and the
 * delay is drawn from its upper half ("equal jitter"): waiters spread out, yet none waits long.
 */
export interface BackoffPolicy {
  readonly baseMs: number;
  readonly capMs: number;
}

export const defaultBackoff: BackoffPolicy = Object.freeze({ baseMs: 5, capMs: 200 });

/** Delay before attempt number `attempt` (1 = the first retry). */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy = defaultBackoff, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const windowMs = Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
  return Math.round(windowMs / 2 + random() * (windowMs / 2));
}
