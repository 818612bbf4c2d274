import type { LockClient } from '@deadbolt/core';
import { now } from './history.js';
import type { RegisterPort, WorkerConfig } from './worker-types.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What a worker holds (a lock, a read or write side, a permit, a leader's term), as the checker sees it. */
export interface Hold {
  readonly signal: AbortSignal;
  readonly fence: number | undefined;
  /** Whether this hold writes the registers (a reader or a semaphore permit only reads). */
  readonly writes: boolean;
  readonly mode?: 'read' | 'write';
  /** Ends the hold (a release; nothing for a term, which ends when the body returns). */
  readonly letGo: () => Promise<void>;
}

/**
 * One interval under a hold: read the registers, check the signal as a real program does, work
 * for holdMs, write with the fence, let go, and record the interval with the moments the checker
 * needs (when the loss was noticed, when the lease last ran from). A pause between the check and
 * the write (Kleppmann's GC pause) thus produces the stale write the fenced store must refuse.
 *
 * A holder told it lost the lock while it works does not write: its interval ends at the notice,
 * and a write after it would land outside every hold the checker sees. "While it works" is decided
 * by the clock, not by which callback runs first: a frozen process hears of its loss only when it
 * wakes, after its work was due to end, and then writes, whatever order its timers fire in.
 */
export async function workUnderHold(client: LockClient, cfg: WorkerConfig, port: RegisterPort, hold: Hold): Promise<void> {
  const start = now();
  let lostNoticeAt: number | undefined;
  let lastRenewAt = start;
  let endedAt = start;
  hold.signal.addEventListener(
    'abort',
    () => {
      lostNoticeAt = now();
    },
    { once: true },
  );
  const onRenew = (): void => {
    lastRenewAt = now();
  };
  client.on('renewed', onRenew);
  try {
    const seen = await port.read();
    if (!hold.signal.aborted) {
      // Past the check, before the write: the window a pause turns into a stale write.
      const workEndsAt = now() + cfg.holdMs;
      port.acquired?.(cfg.name);
      await sleep(cfg.holdMs);
      const toldWhileWorking = lostNoticeAt !== undefined && lostNoticeAt < workEndsAt;
      if (hold.writes && !toldWhileWorking) await port.write(cfg.name, hold.fence, seen.plain + 1, seen.fenced + 1);
    }
  } finally {
    // The interval ends when the client stops acting under the hold, i.e. when it lets go: the
    // server may grant the next waiter before our release's reply arrives.
    endedAt = now();
    await hold.letGo().catch(() => undefined);
    client.off('renewed', onRenew);
  }
  const end = lostNoticeAt !== undefined && lostNoticeAt < endedAt ? lostNoticeAt : endedAt;
  port.record({
    client: cfg.name,
    start,
    end,
    fence: hold.fence,
    outcome: lostNoticeAt !== undefined && lostNoticeAt <= endedAt ? 'lost' : 'released',
    ...(lostNoticeAt !== undefined ? { lostNoticeAt } : {}),
    leaseExpiresAt: lastRenewAt + cfg.ttlMs,
    ...(hold.mode ? { mode: hold.mode } : {}),
  });
}
