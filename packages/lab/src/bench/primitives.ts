import { setTimeout as delay } from 'node:timers/promises';
import { round, summarizeLatencies } from './stats.js';
import type { BenchRow, Subject, Workload } from './subject.js';
import { runUncontended, type RunSettings } from './workloads.js';

/**
 * Bench rows of read-write locks and semaphores (issue 16): the uncontended cost of one permit,
 * read or write beside the mutex's, a semaphore of 5 permits under 20 workers beside
 * redis-semaphore's Semaphore, and a read-heavy read-write lock beside the mutex running the same loop.
 */
export interface PrimitiveRun {
  readonly subject: Subject;
  readonly workload: Workload;
  /** 1: one client, one hold at a time on its own key; more: that many clients on one key. */
  readonly workers: number;
  readonly holdMs: number;
}

export async function runPrimitive(run: PrimitiveRun, settings: RunSettings): Promise<BenchRow> {
  if (run.workers === 1) return { ...(await runUncontended(run.subject, 1, settings)), workload: run.workload };
  return runShared(run, settings);
}

/**
 * `workers` clients loop on ONE key: acquire (a permit, a read or a write, as the subject does),
 * hold `holdMs`, release. Acquisitions/s, wait latency, fairness (max / min acquisitions per
 * worker) and, in the notes, the most holders seen at once.
 */
async function runShared(run: PrimitiveRun, settings: RunSettings): Promise<BenchRow> {
  const { subject, workers, holdMs } = run;
  const clients = await Promise.all(Array.from({ length: workers }, () => subject.open()));
  const key = `${settings.keyspace}:shared`;
  const waits: number[] = [];
  const perWorker = new Array<number>(workers).fill(0);
  let failures = 0;
  let holders = 0;
  let mostHolders = 0;
  try {
    await Promise.all(
      clients.map(async (client, index) => {
        const release = await client.acquire(`${settings.keyspace}:warm:${index}`);
        await release();
      }),
    );
    const started = performance.now();
    const until = started + settings.durationMs;
    await Promise.all(
      clients.map(async (client, worker) => {
        while (performance.now() < until) {
          const t0 = performance.now();
          let release: () => Promise<void>;
          try {
            release = await client.acquire(key);
          } catch {
            failures += 1;
            continue;
          }
          waits.push(performance.now() - t0);
          holders += 1;
          mostHolders = Math.max(mostHolders, holders);
          perWorker[worker]! += 1;
          if (holdMs > 0) await delay(holdMs);
          holders -= 1;
          await release().catch(() => undefined);
        }
      }),
    );
    const elapsedSeconds = (performance.now() - started) / 1000;
    const served = perWorker.filter((count) => count > 0);
    return {
      backend: subject.backend,
      mode: subject.mode,
      subject: subject.subject,
      workload: run.workload,
      holdMs,
      opsPerSec: round(waits.length / elapsedSeconds, 1),
      ownerChangesPerSec: null,
      ...summarizeLatencies(waits),
      fairness: served.length < workers ? Number.POSITIVE_INFINITY : round(Math.max(...perWorker) / Math.min(...perWorker), 2),
      ratioToRaw: null,
      failures,
      extra: { mostHolders, starvedWorkers: workers - served.length },
    };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
}

/** The mutex row a primitive row is measured against: same backend, the mode's first word, same loop. */
function mutexBaseline(row: BenchRow, rows: readonly BenchRow[]): BenchRow | undefined {
  const mode = row.mode.split(' ')[0];
  const workload = row.workload.endsWith('-uncontended') ? 'uncontended' : row.workload;
  return rows.find(
    (other) =>
      other !== row &&
      other.subject === 'deadbolt' &&
      other.backend === row.backend &&
      other.mode === mode &&
      other.workload === workload &&
      (workload === 'uncontended' || (other.holdMs ?? 0) === (row.holdMs ?? 0)),
  );
}

/** Adds `vsMutex` (ops/s over the mutex's, same run) to the notes of every Deadbolt primitive row. */
export function addMutexRatios(rows: BenchRow[]): void {
  for (const row of rows) {
    if (row.subject !== 'deadbolt' || row.mode.split(' ').length < 2) continue;
    const baseline = mutexBaseline(row, rows);
    if (baseline && baseline.opsPerSec > 0) row.extra = { ...row.extra, vsMutex: round(row.opsPerSec / baseline.opsPerSec, 2) };
  }
}
