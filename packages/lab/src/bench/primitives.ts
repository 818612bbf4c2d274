import { round } from './stats.js';
import type { BenchRow, Subject, Workload } from './subject.js';
import { openContended, openUncontended, type Slicer } from './workloads.js';

/**
 * Bench rows of read-write locks and semaphores: the uncontended cost of one permit,
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

/**
 * Opens a primitive run for interleaved slices. One worker: the uncontended loop. More: `workers`
 * clients loop on ONE key (acquire a permit, a read or a write, as the subject does; hold `holdMs`;
 * release): acquisitions/s, wait latency, fairness (max / min acquisitions per worker) and, in the
 * notes, the most holders seen at once.
 */
export function openPrimitive(run: PrimitiveRun, keyspace: string): Promise<Slicer> {
  if (run.workers === 1) return openUncontended(run.subject, 1, keyspace, run.workload);
  return openContended(run.subject, { workers: run.workers, holdMs: run.holdMs, workload: run.workload, kind: 'shared' }, keyspace);
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

/**
 * Adds `vsMutex` (ops/s over the mutex's, same run) to the notes of every Deadbolt primitive row, and
 * to each semaphore row with a hold `boundPerSec`: P permits held h ms each cannot be acquired more
 * than P / h times a second, whatever the lock (the BLPOP/LPUSH token row measures the bound at hold 0).
 */
/** The semaphore rows' shape: 5 permits, 20 workers. */
export const semaphorePermits = 5;
export const semaphoreWorkers = 20;

export function addMutexRatios(rows: BenchRow[]): void {
  for (const row of rows) {
    if (row.workload === 'semaphore-5x20' && (row.holdMs ?? 0) > 0)
      row.extra = { ...row.extra, boundPerSec: round((semaphorePermits * 1000) / row.holdMs!, 0) };
    if (row.subject !== 'deadbolt' || row.mode.split(' ').length < 2) continue;
    const baseline = mutexBaseline(row, rows);
    if (baseline && baseline.opsPerSec > 0) row.extra = { ...row.extra, vsMutex: round(row.opsPerSec / baseline.opsPerSec, 2) };
  }
}
