import { setTimeout as delay } from 'node:timers/promises';
import { round, summarizeLatencies } from './stats.js';
import type { BenchRow, Mutex, Subject, Workload } from './subject.js';

export interface RunSettings {
  readonly durationMs: number;
  /** A unique namespace per measurement so runs never see each other's keys. */
  readonly keyspace: string;
}

function baseRow(subject: Subject, workload: Workload): Pick<BenchRow, 'backend' | 'mode' | 'subject' | 'workload'> {
  return { backend: subject.backend, mode: subject.mode, subject: subject.subject, workload };
}

/** One client, `inFlight` loops on distinct keys: acquire, release, again. Measures cycles/s and cycle latency. */
export async function runUncontended(subject: Subject, inFlight: number, settings: RunSettings): Promise<BenchRow> {
  const mutex = await subject.open();
  const latencies: number[] = [];
  let failures = 0;
  try {
    await cycle(mutex, `${settings.keyspace}:warm`); // connect and load scripts outside the measurement
    const started = performance.now();
    const until = started + settings.durationMs;
    await Promise.all(
      Array.from({ length: inFlight }, async (_, index) => {
        const key = `${settings.keyspace}:${index}`;
        while (performance.now() < until) {
          const t0 = performance.now();
          try {
            await cycle(mutex, key);
            latencies.push(performance.now() - t0);
          } catch {
            failures += 1;
          }
        }
      }),
    );
    const elapsedMs = performance.now() - started;
    return {
      ...baseRow(subject, inFlight === 1 ? 'uncontended' : 'uncontended-50'),
      opsPerSec: round(latencies.length / (elapsedMs / 1000), 1),
      ownerChangesPerSec: null,
      ...summarizeLatencies(latencies),
      fairness: null,
      ratioToRaw: null,
      failures,
    };
  } finally {
    await mutex.close();
  }
}

async function cycle(mutex: Mutex, key: string): Promise<void> {
  const release = await mutex.acquire(key);
  await release();
}

/**
 * `workers` independent clients loop on ONE key: acquire, hold `holdMs`, release. Measures
 * acquisitions/s, owner changes/s (an acquisition by another worker than the previous holder: a
 * lock that one worker keeps re-taking scores high on acquisitions and low here), wait latency
 * and fairness (max / min acquisitions per worker).
 */
export async function runContended(subject: Subject, workers: number, holdMs: number, settings: RunSettings): Promise<BenchRow> {
  const mutexes = await Promise.all(Array.from({ length: workers }, () => subject.open()));
  const key = `${settings.keyspace}:hot`;
  const waits: number[] = [];
  const perWorker = new Array<number>(workers).fill(0);
  let previousHolder = -1;
  let ownerChanges = 0;
  let failures = 0;
  let holders = 0;
  let overlaps = 0;
  try {
    await Promise.all(mutexes.map((mutex, index) => cycle(mutex, `${settings.keyspace}:warm:${index}`)));
    const started = performance.now();
    const until = started + settings.durationMs;
    await Promise.all(
      mutexes.map(async (mutex, worker) => {
        while (performance.now() < until) {
          const t0 = performance.now();
          let release: () => Promise<void>;
          try {
            release = await mutex.acquire(key);
          } catch {
            failures += 1;
            continue;
          }
          waits.push(performance.now() - t0);
          holders += 1;
          if (holders > 1) overlaps += 1;
          perWorker[worker]! += 1;
          if (worker !== previousHolder) ownerChanges += 1;
          previousHolder = worker;
          if (holdMs > 0) await delay(holdMs);
          holders -= 1;
          await release().catch(() => undefined);
        }
      }),
    );
    const elapsedSeconds = (performance.now() - started) / 1000;
    const served = perWorker.filter((count) => count > 0);
    return {
      ...baseRow(subject, workers === 10 ? 'contended-10' : 'contended-50'),
      holdMs,
      opsPerSec: round(waits.length / elapsedSeconds, 1),
      ownerChangesPerSec: round(ownerChanges / elapsedSeconds, 1),
      ...summarizeLatencies(waits),
      // A worker that never got the lock makes fairness infinite: report it as such.
      fairness: served.length < workers ? Number.POSITIVE_INFINITY : round(Math.max(...perWorker) / Math.min(...perWorker), 2),
      ratioToRaw: null,
      failures,
      extra: { overlaps, starvedWorkers: workers - served.length },
    };
  } finally {
    await Promise.all(mutexes.map((mutex) => mutex.close()));
  }
}
