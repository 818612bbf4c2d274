/** What the benchmark measures: something that can take and give back a lock on a key. */
export interface Mutex {
  /** Resolves with the release function once the lock is held; rejects if it was not acquired. */
  acquire(key: string): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** 'token-handoff': the limit of a contended hand-off (one token passed by BLPOP/LPUSH), not a lock. */
export type SubjectKind = 'deadbolt' | 'raw' | 'token-handoff' | 'node-redlock' | 'redis-semaphore' | 'etcd3-lock';

export interface Subject {
  readonly backend: string;
  readonly mode: string;
  readonly subject: SubjectKind;
  /** A new, independent client (its own connections): one per worker. */
  open(): Promise<Mutex>;
}

export type Workload =
  | 'uncontended'
  | 'uncontended-50'
  | 'contended-10'
  | 'contended-50'
  | 'scale-10k'
  // Read-write locks and semaphores (primitives.ts): one client, one hold at a time, of a permit,
  // a read or a write; 20 workers on one semaphore of 5 permits; 20 workers on one read-write
  // lock, 90% reads (the mutex runs the same loop as its baseline).
  | 'permit-uncontended'
  | 'read-uncontended'
  | 'write-uncontended'
  | 'semaphore-5x20'
  | 'rw-90-10x20';

export interface BenchRow {
  backend: string;
  mode: string;
  workload: Workload;
  subject: SubjectKind;
  holdMs?: number;
  opsPerSec: number;
  ownerChangesPerSec: number | null;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  fairness: number | null;
  ratioToRaw: number | null;
  failures?: number;
  extra?: Record<string, number>;
}
