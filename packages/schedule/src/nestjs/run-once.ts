import { InvalidArgumentError, type RunOnceResult } from '@deadbolt/core';
import { CronTime } from 'cron';
import { type TickOptions, validateTick } from '../options.js';
import { runTick, tickBefore } from '../tick.js';
import { heldClient } from './client-holder.js';

/** The reflect-metadata calls this uses (Nest applications load reflect-metadata). */
interface MetadataReflect {
  getMetadataKeys(target: object): unknown[];
  getOwnMetadataKeys(target: object): unknown[];
  getMetadata(key: unknown, target: object): unknown;
  defineMetadata(key: unknown, value: unknown, target: object): void;
}

/** The metadata key `@Cron` writes its options under (`@nestjs/schedule`'s SCHEDULE_CRON_OPTIONS, not exported). */
const SCHEDULE_CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';

interface CronMetadata {
  readonly cronTime: string | Date;
  readonly timeZone?: string;
  readonly utcOffset?: number;
}

/**
 * Makes a `@Cron` method run on one replica per tick, whichever order the two decorators come in:
 * `@Cron('0 3 * * *') @RunOnce('nightly-report', { lockAtLeastForMs: 30_000, lockAtMostForMs: 600_000 })`.
 * The LockClient is DeadboltScheduleModule's. The method gets the tick's context ({ scheduledAt,
 * signal, fence }) as its argument (in place of what `cron` passes to an onTick); the replica that runs the tick resolves
 * the method's value, the others undefined. Bad options throw InvalidArgumentError when the
 * class is defined.
 */
export function RunOnce(name: string, options: TickOptions): MethodDecorator {
  validateTick(name, () => undefined, options);
  return (_target, _key, descriptor) => {
    const method: unknown = descriptor.value;
    if (typeof method !== 'function') {
      throw new InvalidArgumentError('@RunOnce', 'expected a method', { key: name, backend: 'schedule' });
    }
    const body = method as (...args: unknown[]) => unknown;
    const reflect = Reflect as unknown as MetadataReflect;
    async function runOnceAcrossReplicas(this: unknown): Promise<unknown> {
      const locks = heldClient();
      if (locks === undefined) {
        throw new InvalidArgumentError(
          'DeadboltScheduleModule',
          `@RunOnce('${name}') found no LockClient: import DeadboltScheduleModule.forRoot(...)`,
          {
            key: name,
            backend: 'schedule',
          },
        );
      }
      const cron = reflect.getMetadata(SCHEDULE_CRON_OPTIONS, runOnceAcrossReplicas) as CronMetadata | undefined;
      if (cron === undefined) {
        throw new InvalidArgumentError('@RunOnce', `the method of '${name}' has no @Cron: its ticks cannot be told apart`, {
          key: name,
          backend: 'schedule',
        });
      }
      const time =
        cron.timeZone === undefined
          ? new CronTime(cron.cronTime, null, cron.utcOffset ?? null)
          : new CronTime(cron.cronTime, cron.timeZone);
      const scheduledAt = tickBefore((from) => time.getNextDateFrom(from).toJSDate(), options.lockAtLeastForMs);
      const result: RunOnceResult<unknown> = await runTick(locks, name, scheduledAt, (context) => body.call(this, context), options);
      return result.ran ? result.value : undefined;
    }
    // @Cron above @RunOnce marks the wrapper; below it, it marked the method: carry its marks over.
    for (const key of reflect.getOwnMetadataKeys(method))
      reflect.defineMetadata(key, reflect.getMetadata(key, method), runOnceAcrossReplicas);
    descriptor.value = runOnceAcrossReplicas as typeof descriptor.value;
    return descriptor;
  };
}
