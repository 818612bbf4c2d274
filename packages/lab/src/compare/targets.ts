/**
 * The single-server lock backends the fault scenarios run against, one entry per backend/mode.
 * A scenario names the ones it uses; `--quick` and the tests pick rows by `backend/mode`.
 */
import type { servers } from './scenario-kit.js';

type Servers = Awaited<ReturnType<typeof servers>>;

export interface Target {
  readonly backend: string;
  readonly mode: string;
  /** The adapter package (imported so it registers its URL scheme). */
  readonly pkg: string;
  /** The lease the run uses; for ZooKeeper the session timeout, which plays that part. */
  readonly ttlMs: number;
  /** Whether grants carry fencing tokens (Memcached's do not: nothing can refuse its stale write). */
  readonly fenced: boolean;
  /**
   * The lock lives as long as the client's database session, not a lease (PostgreSQL advisory
   * locks): a paused client keeps its session, so it keeps the lock and nobody else gets it.
   */
  readonly sessionBound?: boolean;
  start(s: Servers): Promise<{ url: string; host: string; port: number; stop(): Promise<void> }>;
  url(serverUrl: string): string;
}

export const targetCatalogue = {
  'redis/setnx': {
    backend: 'redis',
    mode: 'setnx',
    pkg: '@deadbolt/redis',
    ttlMs: 1000,
    fenced: true,
    start: (s) => s.startRedis(),
    url: (u) => `${u}?mode=setnx`,
  },
  'redis/fair': {
    backend: 'redis',
    mode: 'fair',
    pkg: '@deadbolt/redis',
    ttlMs: 1000,
    fenced: true,
    start: (s) => s.startRedis(),
    url: (u) => `${u}?mode=fair`,
  },
  'redis/hash-reentrant': {
    backend: 'redis',
    mode: 'hash-reentrant',
    pkg: '@deadbolt/redis',
    ttlMs: 1000,
    fenced: true,
    start: (s) => s.startRedis(),
    url: (u) => `${u}?mode=hash-reentrant`,
  },
  'memcached/default': {
    backend: 'memcached',
    mode: 'default',
    pkg: '@deadbolt/memcached',
    ttlMs: 1000,
    fenced: false,
    start: (s) => s.startMemcached(),
    url: (u) => u,
  },
  'postgres/advisory': {
    backend: 'postgres',
    mode: 'advisory',
    pkg: '@deadbolt/postgres',
    ttlMs: 1000,
    fenced: true,
    sessionBound: true,
    start: (s) => s.startPostgres(),
    url: (u) => `${u}?mode=advisory`,
  },
  'postgres/lease': {
    backend: 'postgres',
    mode: 'lease',
    pkg: '@deadbolt/postgres',
    ttlMs: 1000,
    fenced: true,
    start: (s) => s.startPostgres(),
    url: (u) => `${u}?mode=lease`,
  },
  'zookeeper/ephemeral-sequential': {
    // A lock lives as long as the ZooKeeper session, so the session timeout plays the ttl (the
    // ttl itself is ignored). tickTime 500 lets the server grant a 2 s session (2..20 ticks).
    backend: 'zookeeper',
    mode: 'ephemeral-sequential',
    pkg: '@deadbolt/zookeeper',
    ttlMs: 2000,
    fenced: true,
    start: (s) => s.startZooKeeper({ tickTimeMs: 500 }),
    url: (u) => `${u}?sessionTimeoutMs=2000`,
  },
  'etcd/concurrency-mutex': {
    // As ZooKeeper: a lock lives as long as the client's lease, so sessionTtlMs plays the ttl.
    // 2 s is above etcd's minimum TTL (1.5 x its 1 s election timeout).
    backend: 'etcd',
    mode: 'concurrency-mutex',
    pkg: '@deadbolt/etcd',
    ttlMs: 2000,
    fenced: true,
    start: (s) => s.startEtcd(),
    url: (u) => `${u}?sessionTtlMs=2000`,
  },
} as const satisfies Record<string, Target>;

export type TargetName = keyof typeof targetCatalogue;

export function targets(names: readonly TargetName[]): Target[] {
  return names.map((n) => targetCatalogue[n]);
}
