import type { HoldDriver } from './contract/drivers.js';
import { backoffDelayMs } from './backoff.js';
import { sleep } from './sleep.js';

/** Notifications can be missed (a subscriber reconnecting): never trust one for longer than this. */
const notificationFallbackMs = 2_000;

/**
 * Waits between attempts on a busy lock: for the driver's change notification where it has one,
 * bounded by a fallback, else for a jittered backoff; never past the holder's known remaining lease
 * (`retryAfterMs`) or the acquire's deadline.
 */
export async function waitForTurn(
  driver: Pick<HoldDriver, 'waitForChange'>,
  fullKey: string,
  attempt: number,
  remainingMs: number,
  retryAfterMs: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  const hintMs = retryAfterMs !== undefined && retryAfterMs >= 0 ? retryAfterMs + 1 : Number.POSITIVE_INFINITY;
  if (driver.waitForChange) {
    // The fallback grows with the attempts, jittered: a crowd of waiters that keeps missing the
    // lock would otherwise poll the server in lockstep every 2 s (1,000 waiters: 500 attempts/s)
    // and starve the hand-off it is waiting for. Releases still wake the head at once.
    const fallbackMs = notificationFallbackMs * Math.min(attempt, 5) * (0.75 + Math.random() * 0.5);
    const maxWaitMs = Math.max(1, Math.min(remainingMs, hintMs, fallbackMs));
    await driver.waitForChange(fullKey, maxWaitMs, signal);
    signal.throwIfAborted();
    return;
  }
  await sleep(Math.max(1, Math.min(remainingMs, hintMs, backoffDelayMs(attempt))), signal);
}
