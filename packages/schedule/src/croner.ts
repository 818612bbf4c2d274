import type { LockClient } from '@deadbolt/core';
import { type TickOptions, validateTick } from './options.js';
import { runTick, type TickJob, tickBefore } from './tick.js';

/** The part of a croner `Cron` this reads: its "next run after". */
interface CronerJobLike {
  nextRun(from?: Date): Date | null;
}

/**
 * A callback for croner's `new Cron(pattern, callback)` that runs `fn` on one replica per tick:
 * `new Cron('0 3 * * *', onceAcrossReplicas(locks, 'report', fn, options))`. croner passes the job
 * as the first argument; the tick is found through it. Bad input throws InvalidArgumentError here.
 */
export function onceAcrossReplicas<T>(
  locks: LockClient,
  name: string,
  fn: TickJob<T>,
  options: TickOptions,
): (job: CronerJobLike) => Promise<void> {
  validateTick(name, fn, options);
  return async (job) => {
    const scheduledAt = tickBefore((from) => job.nextRun(from), options.lockAtLeastForMs);
    await runTick(locks, name, scheduledAt, fn, options);
  };
}
