import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createLockClient } from '@deadbolt/core';
import { onceAcrossReplicas } from '@deadbolt/schedule/croner';
import { Cron } from 'croner';

/** What the replicas did with one tick: the replicas that ran it, and how many reported it at all. */
export interface TickRow {
  readonly tick: string;
  readonly ranOn: number[];
  readonly reported: number;
}

export interface ScheduleRun {
  readonly ticks: TickRow[];
  /** Ticks run more than once, and ticks no replica ran. */
  readonly duplicates: number;
  readonly missing: number;
}

const cli = fileURLToPath(new URL('./cli.js', import.meta.url));

/**
 * Three (or `replicas`) processes of this CLI schedule one job every second with croner; with the
 * lock, each tick goes through `onceAcrossReplicas`. Watches `ticks` ticks from the second whole
 * second after all are up, until every replica reported each (ran or skipped) or a deadline.
 */
export async function runSchedule(backend: string, replicas: number, ticks: number, withLock: boolean): Promise<ScheduleRun> {
  const job = `demo:schedule:${process.pid}:${Date.now()}`;
  const reports = new Map<string, { ranOn: number[]; reported: number }>();
  let onReport = (): void => undefined;
  const children = Array.from({ length: replicas }, (_, index) =>
    fork(cli, ['--schedule-replica', String(index + 1), '--backend', backend, '--job', job, ...(withLock ? ['--with-lock'] : [])], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  try {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve, reject) => {
            child.on('message', (message: { tick?: string; replica?: number; ran?: boolean } | string) => {
              if (message === 'ready') return resolve();
              if (typeof message !== 'object' || message.tick === undefined) return;
              const row = reports.get(message.tick) ?? { ranOn: [], reported: 0 };
              if (message.ran && message.replica !== undefined) row.ranOn.push(message.replica);
              row.reported += 1;
              reports.set(message.tick, row);
              onReport();
            });
            child.once('exit', (code) => reject(new Error(`a replica exited with code ${code}`)));
          }),
      ),
    );
    const first = Math.ceil(Date.now() / 1000) * 1000 + 1000;
    const window = Array.from({ length: ticks }, (_, index) => new Date(first + index * 1000).toISOString());
    await new Promise<void>((resolve) => {
      const deadline = setTimeout(resolve, first + ticks * 1000 + 3_000 - Date.now());
      onReport = () => {
        if (window.every((tick) => (reports.get(tick)?.reported ?? 0) >= replicas)) {
          clearTimeout(deadline);
          resolve();
        }
      };
    });
    const rows = window.map((tick) => ({
      tick,
      ranOn: [...(reports.get(tick)?.ranOn ?? [])].sort(),
      reported: reports.get(tick)?.reported ?? 0,
    }));
    return {
      ticks: rows,
      duplicates: rows.filter((row) => row.ranOn.length > 1).length,
      missing: rows.filter((row) => row.ranOn.length === 0).length,
    };
  } finally {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.send('stop');
          }),
      ),
    );
  }
}

/** One replica: the job every second, reported to the parent; with the lock, once across replicas. */
export async function scheduleReplica(replica: number, backend: string, job: string, withLock: boolean): Promise<void> {
  const locks = withLock ? createLockClient(backend) : undefined;
  const tell = (tick: Date, ran: boolean): void => void process.send?.({ tick: tick.toISOString(), replica, ran });
  // The job itself: 50 ms of "work". The hold (700 ms from the tick) covers the replicas' jitter.
  const work = async (tick: Date): Promise<void> => {
    tell(tick, true);
    await new Promise((resolve) => setTimeout(resolve, 50));
  };
  const timing = { lockAtLeastForMs: 700, lockAtMostForMs: 10_000 };
  const callback = locks
    ? onceAcrossReplicas(locks, job, ({ scheduledAt }) => work(scheduledAt), { ...timing, onSkip: (skip) => tell(skip.scheduledAt, false) })
    : () => work(new Date(Math.floor(Date.now() / 1000) * 1000));
  // Connected before it says ready: a replica's first claim must not pay for loading the adapter
  // and connecting, or on a loaded machine every replica reaches the first tick after its hold
  // ended and skips it.
  if (locks) await (await locks.tryAcquire(`${job}:warm-up:${replica}`, { ttlMs: 1_000 }))?.release();
  const cron = new Cron('* * * * * *', callback);
  await new Promise<void>((resolve) => {
    process.on('message', (message) => {
      if (message === 'stop') resolve();
    });
    process.send?.('ready');
  });
  cron.stop();
  await locks?.close();
  process.disconnect();
}
