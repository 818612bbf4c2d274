/** What a backend promises. Core and the conformance suite read these; so should users. */
export interface Capabilities {
  /** Under partitions and failover: CP keeps safety (quorum), AP keeps availability (may lose locks). */
  readonly consistency: 'CP' | 'AP';
  /** Whether grants carry a per-key, strictly increasing fencing token. */
  readonly fencing: boolean;
  /** 'server': the server counts re-entries of one owner; 'client': core counts them. */
  readonly reentrant: 'server' | 'client';
  /** Whether `waitForChange` (or a native blocking `acquire`) tells a waiter about a release. */
  readonly notifications: boolean;
  /** 'ttl': the lock expires by time unless renewed; 'session': it lives as long as a connection/session. */
  readonly lease: 'ttl' | 'session';
  /** Whose clock decides expiry. 'client' (redis getset) means skewed clocks can break exclusion. */
  readonly clock: 'server' | 'client';
  /** The shortest lease the backend can honour (memcached expiry is in whole seconds: 1000). */
  readonly minTtlMs: number;
  /** The longest key, in UTF-8 bytes, after the client's prefix is applied. */
  readonly maxKeyBytes: number;
  /** Waiters are granted the lock in arrival order by the server (a queue), with no barging. Absent: false. */
  readonly fair?: boolean;
  /** Read-write locks (`client.readWriteLock`). Absent: false. */
  readonly readWrite?: boolean;
  /** Counting semaphores (`client.semaphore`). Absent: false. */
  readonly semaphore?: boolean;
  /** Multi-key locks (`client.acquireAll`): 'atomic' in one server step, 'ordered' in a global key order. Absent: 'ordered' through core. */
  readonly multi?: 'atomic' | 'ordered' | 'none';
  /** Leader election (`client.elect`) with a strictly increasing term. Absent: false. */
  readonly election?: boolean;
  /**
   * Lock-delay (`lockDelayMs`): after a lease runs out without a release, the server keeps the key
   * from others for that long more, on its own clock. Absent: false (an acquire with a delay is refused).
   */
  readonly lockDelay?: boolean;
  /**
   * The operator API (`client.inspect`, `forceRelease`, `list`) the backend answers, through its
   * operations driver (`LockBackend.operations`). `true`: all three. A list: only those named
   * (memcached `['inspect', 'forceRelease']`: it cannot enumerate keys; PostgreSQL advisory
   * `['inspect']`). Absent or false: none. An operation not declared refuses with
   * UnsupportedOperationError before any I/O. Fields of an inspection the backend cannot know
   * (owner, fence, ttlLeftMs) are absent; each backend's page says which.
   */
  readonly operations?: boolean | readonly ('inspect' | 'forceRelease' | 'list')[];
}
