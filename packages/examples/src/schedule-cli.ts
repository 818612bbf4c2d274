import { redactUrlText } from '@deadbolt/core/adapter';
import { runSchedule, type ScheduleRun } from './schedule-demo.js';

export { scheduleReplica } from './schedule-demo.js';

export const scheduleHelp = `npm start -- --example schedule [--backend URL] [--replicas N] [--ticks N] [--json]

  Three processes (--replicas, default 3) on this machine schedule one job every second with
  croner, for --ticks ticks (default 5): first with no lock (each tick runs on every replica), then
  through @deadbolt/schedule (each tick runs once). Needs a real backend, e.g.
  --backend redis://127.0.0.1:6379 (or DEADBOLT_URL).`;

export interface ScheduleExample {
  readonly backend: string;
  readonly withoutLock: ScheduleRun;
  readonly withLock: ScheduleRun;
}

export async function runScheduleExample(backend: string, replicas: number, ticks: number): Promise<ScheduleExample> {
  if (backend.startsWith('memory:')) {
    throw new Error(
      '--example schedule needs a real backend: memory:// locks only work inside one process (try --backend redis://127.0.0.1:6379)',
    );
  }
  return {
    backend: redactUrlText(backend),
    withoutLock: await runSchedule(backend, replicas, ticks, false),
    withLock: await runSchedule(backend, replicas, ticks, true),
  };
}

/** Prints the two runs; the exit code is 0 when, with the lock, every tick ran exactly once. */
export function printSchedule(example: ScheduleExample, json: boolean): number {
  const ok = example.withLock.duplicates === 0 && example.withLock.missing === 0;
  if (json) {
    console.log(JSON.stringify(example));
    return ok ? 0 : 1;
  }
  console.log(`A job every second on ${example.withLock.ticks[0]?.reported ?? 0} replica(s), backend ${example.backend}`);
  for (const [title, run] of [
    ['without lock', example.withoutLock],
    ['with @deadbolt/schedule', example.withLock],
  ] as const) {
    console.log(`\n${title}:`);
    for (const row of run.ticks) console.log(`  tick ${row.tick.slice(11, 19)}  ran on replica(s) ${row.ranOn.join(', ') || 'none'}`);
  }
  console.log(
    `\nWithout a lock ${example.withoutLock.duplicates} of ${example.withoutLock.ticks.length} ticks ran more than once.`,
    ok
      ? `With @deadbolt/schedule each tick ran exactly once.`
      : `With @deadbolt/schedule ${example.withLock.duplicates} tick(s) ran twice and ${example.withLock.missing} not at all.`,
  );
  return ok ? 0 : 1;
}
