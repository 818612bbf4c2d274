import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createServer } from 'node:net';
import { BackendUnavailableError, createLockClient, InvalidArgumentError, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onceAcrossReplicas as cronTick } from '../src/cron.js';
import { onceAcrossReplicas as cronerTick } from '../src/croner.js';
import { RunOnce } from '../src/nestjs/run-once.js';
import { runCoordinator } from '../src/node-cron.js';
import type { TickSkip } from '../src/options.js';
import { runTick } from '../src/tick.js';

let server: ServerHandle;
let replicaA: LockClient;
let replicaB: LockClient;

beforeAll(async () => {
  server = await startRedis();
  replicaA = createLockClient({ url: server.url });
  replicaB = createLockClient({ url: server.url });
});
afterAll(async () => {
  await replicaA?.close();
  await replicaB?.close();
  await server?.stop();
});

const untilTime = (at: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
let jobs = 0;
const jobName = (): string => `tick-job-${++jobs}-${Date.now()}`;

describe('runTick', () => {
  it('a replica that reaches a tick after lockAtLeastForMs skips it, though the fast winner let the name go', async () => {
    const name = jobName();
    const scheduledAt = new Date(Date.now());
    const options = { lockAtLeastForMs: 300, lockAtMostForMs: 5_000 };
    expect(await runTick(replicaA, name, scheduledAt, () => 'first', options)).toEqual({ ran: true, value: 'first' });
    await untilTime(scheduledAt.getTime() + 300);
    const skips: TickSkip[] = [];
    const late = await runTick(replicaB, name, scheduledAt, () => 'again', { ...options, onSkip: (skip) => skips.push(skip) });
    expect(late).toEqual({ ran: false });
    expect(skips).toEqual([{ name, scheduledAt, reason: 'late' }]);
  });

  it('a replica on time finds the name taken, and says so', async () => {
    const name = jobName();
    const scheduledAt = new Date();
    const options = { lockAtLeastForMs: 5_000, lockAtMostForMs: 10_000 };
    expect((await runTick(replicaA, name, scheduledAt, () => 1, options)).ran).toBe(true);
    const skips: TickSkip[] = [];
    expect(await runTick(replicaB, name, scheduledAt, () => 2, { ...options, onSkip: (skip) => skips.push(skip) })).toEqual({ ran: false });
    expect(skips.map((skip) => skip.reason)).toEqual(['taken']);
  });

  it('a winner that fired late holds the name until its tick + lockAtLeastForMs, not past the next tick', async () => {
    const name = jobName();
    const options = { lockAtLeastForMs: 2_000, lockAtMostForMs: 10_000 };
    // Tick T fires 1.5 s late on replica A; tick T + 3 s must still run (held from A's claim, it would not).
    const tick = Date.now() - 1_500;
    expect((await runTick(replicaA, name, new Date(tick), () => 'late', options)).ran).toBe(true);
    await untilTime(tick + 3_000);
    expect(await runTick(replicaB, name, new Date(tick + 3_000), () => 'next', options)).toEqual({ ran: true, value: 'next' });
  });

  it('gives the job the tick it runs, and runOnce records it for lastRun', async () => {
    const name = jobName();
    const scheduledAt = new Date();
    const seen = await runTick(replicaA, name, scheduledAt, (context) => context.scheduledAt, {
      lockAtLeastForMs: 100,
      lockAtMostForMs: 1_000,
    });
    expect(seen).toEqual({ ran: true, value: scheduledAt });
    expect((await replicaB.lastRun(name))?.outcome).toBe('ok');
  });
});

describe('bad input: InvalidArgumentError when the integration is built, before any tick', () => {
  const good = { lockAtLeastForMs: 1_000, lockAtMostForMs: 60_000 };
  const cases: [string, () => unknown][] = [
    ['an empty name', () => cronerTick(replicaA, '', () => undefined, good)],
    ['fn not a function', () => cronTick(replicaA, 'job', 'run' as never, good)],
    [
      'lockAtLeastForMs 0 (a late replica would run the tick again)',
      () => cronerTick(replicaA, 'job', () => undefined, { ...good, lockAtLeastForMs: 0 }),
    ],
    [
      'lockAtLeastForMs over lockAtMostForMs',
      () => cronTick(replicaA, 'job', () => undefined, { lockAtLeastForMs: 2, lockAtMostForMs: 1 }),
    ],
    ['a fractional lockAtMostForMs', () => runCoordinator(replicaA, { ...good, lockAtMostForMs: 1.5 })],
    ['an unknown option', () => RunOnce('job', { ...good, lockAtLeastFor: 1 } as never)],
    ['onSkip not a function', () => cronerTick(replicaA, 'job', () => undefined, { ...good, onSkip: 1 as never })],
  ];
  it.each(cases)('%s', (_label, build) => {
    expect(build).toThrow(InvalidArgumentError);
  });
});

describe("node-cron's coordinator", () => {
  it('refuses a key that is not "<name>:<ISO time>", so node-cron skips the run (fail-closed)', async () => {
    const coordinator = runCoordinator(replicaA, { lockAtLeastForMs: 1_000, lockAtMostForMs: 5_000 });
    await expect(coordinator.shouldRun('no-time-here', 5_000)).rejects.toThrow(InvalidArgumentError);
  });

  it('answers yes once, holds the run open until onComplete, then records it', async () => {
    const name = jobName();
    const key = `${name}:${new Date(Math.floor(Date.now() / 1000) * 1000).toISOString()}`;
    const options = { lockAtLeastForMs: 1_000, lockAtMostForMs: 5_000 };
    const first = runCoordinator(replicaA, options);
    const second = runCoordinator(replicaB, options);
    expect(await first.shouldRun(key, 30_000)).toBe(true);
    expect((await replicaB.lastRun(name))?.outcome).toBe('running');
    expect(await second.shouldRun(key, 30_000)).toBe(false);
    await first.onComplete(key);
    expect((await replicaB.lastRun(name))?.outcome).toBe('ok');
  });

  it('on a dead server, shouldRun rejects with a typed error, so node-cron skips the run', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const dead = createLockClient({ url: `redis://127.0.0.1:${port}` });
    try {
      // A tick that fires now, well inside its hold: a tick already past its hold is skipped as late
      // (false) before any I/O, which a tick rounded down to the second was whenever more than the
      // hold had passed since that second began.
      const key = `dead-job:${new Date().toISOString()}`;
      await expect(
        runCoordinator(dead, { lockAtLeastForMs: 10_000, lockAtMostForMs: 20_000 }).shouldRun(key, 5_000),
      ).rejects.toBeInstanceOf(BackendUnavailableError);
    } finally {
      await dead.close();
    }
  });
});
