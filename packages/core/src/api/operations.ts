/**
 * The operator API's public types: who holds a key, how long is left, and the leader's changes.
 * Fields a backend cannot know are absent (see each backend's README section "Operating Deadbolt").
 */

/** One hold on a key. */
export interface LockHolder {
  /**
   * The holder's owner id, where the server stores it beside the hold (memory, redis
   * hash-reentrant and fair). Absent where the server keeps only a random token (redis setnx,
   * getset, redlock; memcached) or no owner at all (PostgreSQL advisory: a session holds the lock).
   */
  readonly owner?: string;
  /**
   * The hold's fencing token, where the backend fences and can tell which fence the hold got
   * (absent on memcached, which does not fence, and on PostgreSQL advisory, which keeps no fence per key).
   */
  readonly fence?: number;
  /**
   * The lease left on the server's clock (or the holder's, for redis getset and memcached), in ms.
   * Absent where a hold has no lease the server knows (PostgreSQL advisory: it lasts as long as its session).
   */
  readonly ttlLeftMs?: number;
  /**
   * The plain lock, a read-write lock's read or write hold, or a semaphore's permit. PostgreSQL
   * advisory reports a write hold as 'mutex': both are the key's one exclusive lock on the server.
   */
  readonly kind: 'mutex' | 'read' | 'write' | 'permit';
}

/**
 * What `client.inspect(key)` sees: every hold on the key, across kinds (the mutex, the read-write
 * lock and the semaphore of one key are separate locks; each hold says which it belongs to).
 */
export interface LockInspection {
  /** The user's key (without the client's prefix). */
  readonly key: string;
  /** True when at least one hold is live. */
  readonly held: boolean;
  readonly holders: readonly LockHolder[];
  /** Queued waiters, where the server queues them (memory's read-write locks and semaphores, redis fair). */
  readonly waiters?: number;
}

/** Options of `client.list()`. */
export interface ListOptions {
  /** Only keys that start with this (after the client's prefix). Default: every key. */
  readonly prefix?: string;
  /** At most this many inspections (a positive integer). Default: no limit. */
  readonly limit?: number;
}

/** Options of `election.observe()`. */
export interface ObserveOptions {
  /** Ends the iteration (it returns, it does not throw). */
  readonly signal?: AbortSignal;
  /** Where the backend has no notifications: how often the leader is read, in ms. Default 250. */
  readonly intervalMs?: number;
}

/** One change of leadership seen by `election.observe()`. */
export interface LeaderChange {
  /** The leader's participant id, or null when there is none. */
  readonly leader: string | null;
  /** The leader's term (its fence), or null when there is no leader. */
  readonly term: number | null;
}

/** The 'forced' event: this client took `key` back from whoever held it (`released`: something was there). */
export interface ForcedEvent {
  readonly key: string;
  readonly released: boolean;
}
