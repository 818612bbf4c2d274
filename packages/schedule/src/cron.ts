import { InvalidArgumentError, type LockClient } from '@deadbolt/core';
import { type TickOptions, validateTick } from './options.js';
import { runTick, type TickJob, tickBefore } from './tick.js';

/** The part of a `cron` CronJob this reads: its CronTime's "next date after". */
interface CronJobLike {
  readonly cronTime: { getNextDateFrom(start: Date): { toJSDate(): Date } };
}

/**
 * An `onTick` for `cron`'s CronJob that runs `fn` on one replica per tick:
 * `CronJob.from({ cronTime, onTick: onceAcrossReplicas(locks, 'report', fn, options), start: true })`.
 * It finds the tick through the job, which `cron` passes as `this` unless `context` is set: leave
 * `context` unset. Bad input throws InvalidArgumentError here, before any tick.
 */
export function onceAcrossReplicas<T>(
  locks: LockClient,
  name: string,
  fn: TickJob<T>,
  options: TickOptions,
): (this: unknown) => Promise<void> {
  validateTick(name, fn, options);
  return async function onTick(this: unknown) {
    if (!isCronJob(this)) {
      throw new InvalidArgumentError('this', "expected the CronJob as the onTick context: leave the job's context option unset", {
        key: name,
        backend: 'schedule',
      });
    }
    const scheduledAt = tickBefore((from) => this.cronTime.getNextDateFrom(from).toJSDate(), options.lockAtLeastForMs);
    await runTick(locks, name, scheduledAt, fn, options);
  };
}

function isCronJob(value: unknown): value is CronJobLike {
  const cronTime = (value as { cronTime?: { getNextDateFrom?: unknown } } | null | undefined)?.cronTime;
  return typeof cronTime?.getNextDateFrom === 'function';
}
