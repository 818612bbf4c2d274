import type { Interval } from './history.js';

/** Where a worker reads and writes the two registers: in-process, or over IPC from a child. */
export interface RegisterPort {
  read(): Promise<{ plain: number; fenced: number }>;
  write(client: string, fence: number | undefined, plain: number, fenced: number): Promise<void>;
  record(interval: Interval): void;
  /** Told when this client has checked its lock and is about to work then write (the nemesis times pauses on it). */
  acquired?(client: string): void;
}

export interface WorkerConfig {
  readonly name: string;
  readonly url: string;
  readonly options?: Readonly<Record<string, unknown>>;
  readonly key: string;
  readonly ttlMs: number;
  /** Time spent "working" between the read and the write: where a pause lands. */
  readonly holdMs: number;
  readonly waitMs: number;
  /** Wall-clock ms at which to stop looping. */
  readonly until: number;
  /** Skew for this client's injected clock (redis getset), ms ahead. */
  readonly clockSkewMs?: number;
  /**
   * Renew the lease while holding (core turns renewal off when acquire names a ttl, so without this
   * every hold is a fixed lease of ttlMs). For scenarios whose holds outlast the ttl.
   */
  readonly autoRenew?: boolean;
  /**
   * What the client takes (default a lock): one side of a read-write lock, a semaphore permit, or
   * leadership in an election (see election-worker.ts). The same key, the same registers.
   */
  readonly primitive?: Primitive;
}

export type Primitive =
  | { readonly kind: 'lock' }
  | { readonly kind: 'read' | 'write' }
  | { readonly kind: 'semaphore'; readonly permits: number }
  | { readonly kind: 'election' };
