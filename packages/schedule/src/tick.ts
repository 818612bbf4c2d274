import type { LockClient, RunContext, RunOnceResult } from '@deadbolt/core';
import type { TickOptions } from './options.js';

/** What a job gets on the replica that runs its tick: runOnce's context and the tick's scheduled time. */
export interface TickContext extends RunContext {
  readonly scheduledAt: Date;
}

/** A scheduled job's body. */
export type TickJob<T> = (context: TickContext) => Promise<T> | T;

/**
 * Runs one scheduled tick of job `name` on at most one replica: `locks.runOnce(name, ...)` with the
 * hold anchored at the tick's scheduled time rather than at this replica's claim. The claim's name is
 * the job's (ShedLock's choice): one lock and one `lastRun` record per job on the server, whatever
 * the number of ticks. The hold ends at `scheduledAt + lockAtLeastForMs`, so a winner that fired late
 * does not eat into the next tick; a replica that reaches the tick after that skips it, since the
 * winner's hold may have ended and claiming would run the tick twice.
 */
export async function runTick<T>(
  locks: LockClient,
  name: string,
  scheduledAt: Date,
  fn: TickJob<T>,
  options: TickOptions,
): Promise<RunOnceResult<T>> {
  const holdMs = scheduledAt.getTime() + options.lockAtLeastForMs - Date.now();
  if (holdMs <= 0) {
    options.onSkip?.({ name, scheduledAt, reason: 'late' });
    return { ran: false };
  }
  const result = await locks.runOnce(name, (context) => fn({ ...context, scheduledAt }), {
    lockAtLeastForMs: Math.min(Math.ceil(holdMs), options.lockAtMostForMs),
    lockAtMostForMs: options.lockAtMostForMs,
  });
  if (!result.ran) options.onSkip?.({ name, scheduledAt, reason: 'taken' });
  return result;
}

/**
 * The tick a replica fires now, from its scheduler's "next run after" function: the first match
 * after `now - lockAtLeastForMs` (the schedulers fire at or after a tick, never before). If that is
 * later than now, this replica got to its tick past the hold: the answer is then a time runTick finds late.
 */
export function tickBefore(nextAfter: (from: Date) => Date | null | undefined, lockAtLeastForMs: number, now = Date.now()): Date {
  const tick = nextAfter(new Date(now - lockAtLeastForMs));
  return tick && tick.getTime() <= now ? tick : new Date(now - lockAtLeastForMs);
}
