import { setTimeout as delay } from 'node:timers/promises';
import { fifoFairnessFloor } from './fifo-floor.js';
import { round, summarizeLatencies } from './stats.js';
import type { BenchRow, Mutex, Subject, Workload } from './subject.js';

/**
 * One subject set up for a measurement that runs in slices (interleave.ts): its clients are opened
 * (and warmed) once and stay open between slices, and every slice adds to the same tallies, so a
 * subject's figure is the sum over its slices.
 */
export interface Slicer {
  readonly subject: Subject;
  /** Runs the loop for about `ms`: each loop finishes the cycle it is in, and that tail is counted too. */
  slice(ms: number): Promise<void>;
  /** The row from every slice so far. */
  row(): BenchRow;
  close(): Promise<void>;
}

async function cycle(mutex: Mutex, key: string): Promise<void> {
  const release = await mutex.acquire(key);
  await release();
}

/**
 * How long each subject runs its loop, unmeasured, when it is opened. One cycle connects and loads
 * scripts, but V8 optimises a function only after many calls: a raw loop of two commands is hot
 * within a few hundred cycles, a client's longer path much later, so short slices measured a cold
 * client (memcached uncontended read 0.56x and 0.75x raw in two --quick runs, ~1.0x in 4 s runs).
 * Services run their lock code hot; the bench measures it hot.
 */
const warmUpMs = 400;

/** Runs `loop` (acquire, release, again) for `ms` on every client, each on its own key. */
async function warmUp(clients: readonly Mutex[], keyspace: string, ms: number): Promise<void> {
  const until = performance.now() + ms;
  await Promise.all(
    clients.map(async (client, index) => {
      do await cycle(client, `${keyspace}:warm:${index}`);
      while (performance.now() < until);
    }),
  );
}

/** Opens `count` clients of a subject; if one fails, the others are closed again. */
async function openClients(subject: Subject, count: number): Promise<Mutex[]> {
  const opened = await Promise.allSettled(Array.from({ length: count }, () => subject.open()));
  const clients = opened.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = opened.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) {
    await Promise.allSettled(clients.map((client) => client.close()));
    throw failed.reason;
  }
  return clients;
}

/**
 * One client, `inFlight` loops on distinct keys: acquire, release, again. Cycles/s and cycle latency.
 * `workload` names the row (the primitives' uncontended rows run this loop too).
 */
export async function openUncontended(subject: Subject, inFlight: number, keyspace: string, workload: Workload): Promise<Slicer> {
  const [mutex] = await openClients(subject, 1);
  const client = mutex!;
  try {
    await warmUp([client], keyspace, warmUpMs); // connected, scripts loaded, code optimised: outside the measurement
  } catch (error) {
    await client.close();
    throw error;
  }
  const latencies: number[] = [];
  let failures = 0;
  let elapsedMs = 0;
  return {
    subject,
    async slice(ms) {
      const started = performance.now();
      const until = started + ms;
      await Promise.all(
        Array.from({ length: inFlight }, async (_, index) => {
          const key = `${keyspace}:${index}`;
          while (performance.now() < until) {
            const t0 = performance.now();
            try {
              await cycle(client, key);
              latencies.push(performance.now() - t0);
            } catch {
              failures += 1;
            }
          }
        }),
      );
      elapsedMs += performance.now() - started;
    },
    row: () => ({
      backend: subject.backend,
      mode: subject.mode,
      subject: subject.subject,
      workload,
      opsPerSec: round(latencies.length / (elapsedMs / 1000), 1),
      ownerChangesPerSec: null,
      ...summarizeLatencies(latencies),
      fairness: null,
      ratioToRaw: null,
      failures,
    }),
    close: () => client.close(),
  };
}

export interface ContendedShape {
  readonly workers: number;
  readonly holdMs: number;
  readonly workload: Workload;
  /**
   * 'mutex': one holder at a time is expected; counts owner changes (an acquisition by another worker
   * than the previous holder: a lock one worker keeps re-taking scores high on acquisitions and low
   * here) and overlaps. 'shared' (semaphores, read-write locks): several holders are allowed; reports
   * the most seen at once instead.
   */
  readonly kind: 'mutex' | 'shared';
}

/**
 * `workers` independent clients loop on ONE key: acquire, hold `holdMs`, release. Acquisitions/s,
 * owner changes/s, wait latency and fairness (max / min acquisitions per worker, over all slices).
 */
export async function openContended(subject: Subject, shape: ContendedShape, keyspace: string): Promise<Slicer> {
  const { workers, holdMs, workload, kind } = shape;
  const clients = await openClients(subject, workers);
  try {
    await warmUp(clients, keyspace, warmUpMs);
  } catch (error) {
    await Promise.allSettled(clients.map((client) => client.close()));
    throw error;
  }
  const key = `${keyspace}:hot`;
  const waits: number[] = [];
  const perWorker = new Array<number>(workers).fill(0);
  /** Acquisitions in each slice: what a perfect FIFO lock's fairness is computed from (fifo-floor.ts). */
  const perSlice: number[] = [];
  let previousHolder = -1;
  let ownerChanges = 0;
  let failures = 0;
  let holders = 0;
  let overlaps = 0;
  let mostHolders = 0;
  let elapsedMs = 0;
  return {
    subject,
    async slice(ms) {
      const started = performance.now();
      const until = started + ms;
      const before = waits.length;
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
            if (holders > 1) overlaps += 1;
            mostHolders = Math.max(mostHolders, holders);
            perWorker[worker]! += 1;
            if (worker !== previousHolder) ownerChanges += 1;
            previousHolder = worker;
            if (holdMs > 0) await delay(holdMs);
            holders -= 1;
            await release().catch(() => undefined);
          }
        }),
      );
      elapsedMs += performance.now() - started;
      perSlice.push(waits.length - before);
    },
    row: (): BenchRow => {
      const elapsedSeconds = elapsedMs / 1000;
      const served = perWorker.filter((count) => count > 0);
      const floor = kind === 'mutex' ? fifoFairnessFloor(perSlice, workers) : null;
      return {
        backend: subject.backend,
        mode: subject.mode,
        subject: subject.subject,
        workload,
        holdMs,
        opsPerSec: round(waits.length / elapsedSeconds, 1),
        ownerChangesPerSec: kind === 'mutex' ? round(ownerChanges / elapsedSeconds, 1) : null,
        ...summarizeLatencies(waits),
        // A worker that never got the lock makes fairness infinite: report it as such.
        fairness: served.length < workers ? Number.POSITIVE_INFINITY : round(Math.max(...perWorker) / Math.min(...perWorker), 2),
        ratioToRaw: null,
        failures,
        extra: {
          ...(kind === 'mutex' ? { overlaps } : { mostHolders }),
          starvedWorkers: workers - served.length,
          // The fairness a perfect FIFO lock would score with these slices' acquisitions.
          ...(floor === null ? {} : { fifoFloor: floor }),
        },
      };
    },
    close: async () => {
      await Promise.all(clients.map((client) => client.close()));
    },
  };
}

export function contendedWorkload(workers: number): Workload {
  return workers === 10 ? 'contended-10' : 'contended-50';
}
