import { randomInt } from 'node:crypto';
import { backoffDelayMs, type AcquireRequest, type AttemptResult, type Grant } from '@deadbolt/core/adapter';

/**
 * A memcached semaphore is `permits` ordinary memcached locks, one per slot key, each taken with
 * `add` and released with a CAS-guarded delete, so a permit has all of a lock's guarantees and
 * limits: AP (a restarted or evicting server forgets its slots), no fencing, leases on the server's
 * clock in whole seconds. An attempt tries the slots one after another from a random start (a
 * fixed start would pile every acquirer onto slot 0) and stops at the first it gets: at most
 * `permits` round trips, one when permits are free. Waiters poll (memcached has no notifications),
 * so the semaphore is unfair: a permit goes to whoever polls first after a release. `permits` is
 * recorded beside the slots (permits-record.ts): a client passing another number is refused.
 */

/** A permit's grant: `slotKey` is the memcached lock it holds. */
export interface SlotGrant extends Grant {
  readonly slotKey: string;
}

/** Slot i of a semaphore. NUL never occurs in a key core accepts, so no user key maps onto a slot. */
export function slotKey(key: string, slot: number): string {
  return `${key}\u0000permit:${slot}`;
}

export async function takeSlot(
  request: AcquireRequest,
  permits: number,
  add: (slotKey: string) => Promise<AttemptResult>,
): Promise<AttemptResult> {
  const start = randomInt(permits);
  for (let i = 0; i < permits; i += 1) {
    const result = await add(slotKey(request.key, (start + i) % permits));
    if (result.acquired) return result;
  }
  return { acquired: false };
}

/**
 * Waits for a slot by polling with capped exponential backoff and jitter (no notifications).
 * `firstTry` is the first attempt (the driver's: the permits check goes out beside it); it is
 * made whatever the deadline, and when it finds every slot taken the wait reports contention.
 */
export async function pollSlots(
  request: AcquireRequest,
  permits: number,
  add: (slotKey: string) => Promise<AttemptResult>,
  deadline: number,
  signal: AbortSignal,
  firstTry: () => Promise<AttemptResult>,
): Promise<Grant | undefined> {
  for (let attempt = 1; !signal.aborted; attempt += 1) {
    const result = await (attempt === 1 ? firstTry() : takeSlot(request, permits, add));
    if (result.acquired) return result.grant;
    if (attempt === 1) request.onContended?.();
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0) return undefined;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, Math.min(remainingMs, backoffDelayMs(attempt))));
      signal.addEventListener('abort', done, { once: true });
    });
  }
  return undefined;
}
