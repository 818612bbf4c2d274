import 'reflect-metadata';
import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, InvalidArgumentError, type LockClient } from '@deadbolt/core';
import { Cron } from '@nestjs/schedule';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { holdClient } from '../src/nestjs/client-holder.js';
import { RunOnce } from '../src/nestjs/run-once.js';
import type { TickContext } from '../src/tick.js';

let server: ServerHandle;
let locks: LockClient;
beforeAll(async () => {
  server = await startRedis();
  locks = createLockClient({ url: server.url });
});
afterAll(async () => {
  await locks?.close();
  await server?.stop();
});
afterEach(() => holdClient(undefined));

// A hold longer than the pattern's interval: any call finds a tick within it, so the first call runs, whatever the machine's speed.
const timing = { lockAtLeastForMs: 5_000, lockAtMostForMs: 10_000 };

function decorated(order: 'cron above' | 'runOnce above', name: string) {
  class Job {
    tick(context: TickContext): Date {
      return context.scheduledAt;
    }
  }
  const decorators = order === 'cron above' ? [Cron('* * * * * *'), RunOnce(name, timing)] : [RunOnce(name, timing), Cron('* * * * * *')];
  const descriptor = Reflect.decorate(decorators, Job.prototype, 'tick', Object.getOwnPropertyDescriptor(Job.prototype, 'tick'));
  Object.defineProperty(Job.prototype, 'tick', descriptor as PropertyDescriptor);
  return new Job() as unknown as { tick(): Promise<Date | undefined> };
}

describe('@RunOnce with @Cron', () => {
  it.each(['cron above', 'runOnce above'] as const)(
    '%s: Nest still finds the @Cron mark, and the method runs once per tick',
    async (order) => {
      const name = `nest-order-${order.replace(' ', '-')}-${Date.now()}`;
      const job = decorated(order, name);
      expect(Reflect.getMetadata('SCHEDULE_CRON_OPTIONS', job.tick)).toMatchObject({ cronTime: '* * * * * *' });
      holdClient(locks);
      const before = Date.now();
      const first = await job.tick();
      expect(first).toBeInstanceOf(Date);
      expect(first?.getMilliseconds()).toBe(0);
      expect(first?.getTime()).toBeLessThanOrEqual(before);
      expect(await job.tick()).toBeUndefined();
      expect((await locks.lastRun(name))?.outcome).toBe('ok');
    },
  );

  it('without DeadboltScheduleModule, a tick is an InvalidArgumentError that says what to import', async () => {
    const job = decorated('cron above', `nest-no-module-${Date.now()}`);
    await expect(job.tick()).rejects.toThrow(/DeadboltScheduleModule\.forRoot/);
    await expect(job.tick()).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
