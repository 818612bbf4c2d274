import type { MachineDescription } from './report.js';
import type { SliceSchedule } from './interleave.js';
import type { SubjectKind } from './subject.js';

/** One subject at one number of workers on one key. */
export interface ContentionPoint {
  readonly backend: string;
  readonly mode: string;
  readonly subject: SubjectKind;
  readonly workers: number;
  readonly ownerChangesPerSec: number;
  readonly acquisitionsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Max / min acquisitions per worker over all slices (workloads.ts); null when a worker never got the lock. */
  readonly fairness: number | null;
  readonly starvedWorkers: number;
  readonly failures: number;
  /** Owner changes/s over the hand-off's at the same number of workers, same run; null for the hand-off itself. */
  readonly vsHandoff: number | null;
}

/** One mode holding `locks` locks with auto-renew over a fixed window. */
export interface HeldPoint {
  readonly backend: string;
  readonly mode: string;
  readonly locks: number;
  readonly ttlMs: number;
  /** Locks lost by the end of the window; of them, those already lost when the last one was taken. */
  readonly lost: number;
  readonly lostWhileAcquiring: number;
  /** Renewal calls that threw while the locks were being taken (before the window). */
  readonly renewalErrorsWhileAcquiring: number;
  readonly heapBytesPerLock: number;
  /** Renewal calls the client made (each one round trip, pipelined) per renewal tick (ttl / 3). */
  readonly clientRenewalCallsPerTick: number;
  /** Commands the server counted per tick (Redis: INFO commandstats, top-level calls); null where not read. */
  readonly serverCommandsPerTick: number | null;
  /** Client CPU (user + system) over the window, in % of one core. */
  readonly clientCpuPercent: number;
  /** Duration of the renewal calls (renew or renewMany), client side. */
  readonly renewalP50Ms: number;
  readonly renewalP99Ms: number;
  /** Renewal calls that threw in the window (a command timeout, say); core retries them every ttl / 10. */
  readonly renewalErrors: number;
  readonly windowMs: number;
  readonly acquirePerSec: number;
}

/** One subject with `keys` concurrent acquire/release loops, each on its own key, on one client. */
export interface KeysPoint {
  readonly backend: string;
  readonly mode: string;
  readonly subject: SubjectKind;
  readonly keys: number;
  readonly opsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failures: number;
}

export interface ScalingMethod {
  readonly schedule: SliceSchedule;
  readonly heldTtlMs: number;
  readonly heldPeriods: number;
  readonly loadAverageAtStart: readonly number[];
  readonly loadAverageAtEnd: readonly number[];
  readonly startedAt: string;
  readonly elapsedSeconds: number;
}

export interface ScalingResults {
  readonly machine: MachineDescription;
  readonly method: ScalingMethod;
  readonly contention: readonly ContentionPoint[];
  readonly held: readonly HeldPoint[];
  readonly keys: readonly KeysPoint[];
}

/** The name a curve carries in the charts and tables: `fair`, `setnx`, `BLPOP/LPUSH hand-off`, `node-redlock`... */
export function seriesName(point: { backend: string; mode: string; subject: SubjectKind }): string {
  if (point.subject === 'deadbolt') return `${point.backend} ${point.mode}`;
  if (point.subject === 'token-handoff') return `${point.backend} hand-off (${point.mode})`;
  if (point.subject === 'raw') return `${point.backend} raw (${point.mode})`;
  return point.subject;
}

/** The hand-off a contention curve is measured against: the token hand-off, else the bare protocol. */
export function isHandoff(point: { subject: SubjectKind }, hasToken: boolean): boolean {
  return hasToken ? point.subject === 'token-handoff' : point.subject === 'raw';
}
