import type { RegisterOp } from './register-ops.js';

/**
 * The history model of the comparison (after Jepsen's histories, https://jepsen.io/analyses):
 * every critical section a client believed it held is one interval.
 */
export type IntervalOutcome = 'released' | 'lost' | 'error';

export interface Interval {
  readonly client: string;
  /** ms (performance.timeOrigin-based wall clock) when acquire resolved. */
  readonly start: number;
  /** ms when the client stopped believing it held the lock (release resolved, or loss noticed). */
  readonly end: number; // when it asked for the release, or noticed the loss if earlier
  readonly fence: number | undefined;
  readonly outcome: IntervalOutcome;
  /** For a read-write lock: readers may share, a writer excludes everyone. Absent: exclusive. */
  readonly mode?: 'read' | 'write';
  /** ms when lock.signal aborted, if it did. */
  readonly lostNoticeAt?: number;
  /** ms when the lease would have expired given the last successful acquire/renew (start + ttl at least). */
  readonly leaseExpiresAt?: number;
}

/** A shaded window on the timeline: when the nemesis was acting. */
export interface FaultWindow {
  readonly label: string;
  readonly start: number;
  readonly end: number; // when it asked for the release, or noticed the loss if earlier
}

/** A write attempted on a register, and whether the store accepted it. */
export interface WriteRecord {
  readonly client: string;
  readonly at: number;
  readonly fence: number | undefined;
  /** The value written (absent in histories recorded before it was kept). */
  readonly value?: number;
  readonly accepted: boolean;
  /** True when a later-fenced holder had already written (the write is stale). */
  readonly stale: boolean;
}

/**
 * The fenced store of a run: a data store of its own (never the lock server under fault) whose
 * writes go through `@deadbolt/fence`, and what it held once every client had finished.
 */
export interface FencedStoreReport {
  readonly kind: 'postgres' | 'redis' | 'memory';
  /** For the pages: "PostgreSQL, admitFence in the write transaction". */
  readonly label: string;
  /** The register's value in the store after the run (0 if never written). */
  readonly finalValue: number;
  /** The highest fence the store recorded for the register, if any write was admitted. */
  readonly finalFence: number | undefined;
}

export interface History {
  /** For a counting semaphore: how many holders may be inside at once (default 1, a mutex). */
  readonly permits?: number;
  readonly intervals: Interval[];
  readonly faults: FaultWindow[];
  readonly plainWrites: WriteRecord[];
  /** Writes to the fenced store, in the order the store decided them. */
  readonly fencedWrites: WriteRecord[];
  /** Which store the fenced writes went to, and its final state (absent in hand-made histories). */
  readonly fencedStore?: FencedStoreReport;
  /** Every read and write on the plain register, for the linearizability check (absent: not recorded). */
  readonly plainOps?: RegisterOp[];
  readonly startedAt: number;
  readonly endedAt: number;
}

export { now } from './clock.js';
