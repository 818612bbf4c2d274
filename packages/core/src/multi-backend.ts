import type { AcquireRequest, Grant, LockBackend } from './backend.js';

/**
 * The optional multi-key part of the adapter contract (`client.acquireAll`). Core takes the keys one
 * by one in a single global order unless the backend offers something better: an atomic step
 * (one Redis script, one memory tick) or native queueing (one ZooKeeper `multi` that enqueues us
 * under every path at once, then a wait path by path).
 */
export type MultiAttemptResult =
  | { readonly acquired: true; readonly grants: readonly Grant[] }
  | {
      readonly acquired: false;
      /** A key that was busy: core waits for news about it before the next attempt. */
      readonly busyKey?: string;
      /** The busy holder's remaining lease, as in AttemptResult. */
      readonly retryAfterMs?: number;
    };

/** Deprecated (the old style, read by contract/legacy.ts): multi-key grants now come as `LockBackend.multi`, a MultiDriver. */
export interface MultiLockBackend extends LockBackend {
  /**
   * The one global order in which core takes keys when it takes them one by one (Redis Cluster:
   * slot, then key). Every client must compute the same order for the same set: a total order is
   * what rules out a cycle of waiters (Havender's "ordered resources", 1968). Default: code-unit order.
   */
  orderKeys?(fullKeys: readonly string[]): readonly string[];
  /** All or nothing in one atomic step; grants in the order of `requests`. Never waits. */
  tryAcquireMany?(requests: readonly AcquireRequest[]): Promise<MultiAttemptResult>;
  /**
   * Native waiting for every key: grants in the order of `requests`, or `undefined` at `deadline` or
   * on abort, in which case nothing may be left behind (as `LockBackend.acquire`).
   */
  acquireMany?(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<readonly Grant[] | undefined>;
}

/** Code-unit order: the same on every client, whatever its locale. */
export function defaultKeyOrder(fullKeys: readonly string[]): string[] {
  return [...fullKeys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
