import type { ServerHandle } from '@deadbolt/conformance/servers';
import { openDeadbolt, openDeadboltReadWrite, openDeadboltSemaphore } from './deadbolt.js';
import { type PrimitiveRun, semaphorePermits, semaphoreWorkers } from './primitives.js';
import { openNodeRedlock, openRedisSemaphore, openRedisSemaphorePermits } from './raw/peers.js';
import { openEtcd3Lock, openRawEtcd } from './raw/etcd.js';
import { openRawMemcached } from './raw/memcached.js';
import { openRawPostgres } from './raw/postgres.js';
import { openRawRedis, openRawTokenHandoff } from './raw/redis.js';
import { openRawZooKeeper } from './raw/zookeeper.js';
import type { Mutex, Subject, SubjectKind } from './subject.js';

/** One backend of the run: its server (if any), its modes and the baselines beside them. */
export interface BackendPlan {
  readonly backend: string;
  /** The adapter package that must be importable, and the server to start. */
  readonly adapterPackage?: string;
  start(): Promise<ServerHandle | undefined>;
  subjects(server: ServerHandle | undefined, ttlMs: number): Subject[];
  /** Modes measured at scale (10 000 held locks), with the URL of each. */
  scaleUrls(server: ServerHandle | undefined): { mode: string; url: string }[];
  /**
   * Overrides of the scale run (default 10 000 locks, ttl 1.5 s) where a backend cannot take the
   * default in reasonable time or granularity; `why` says so in the progress output and here.
   */
  readonly scale?: { readonly locks?: number; readonly ttlMs?: number; readonly why: string };
  /** Read-write lock and semaphore rows (primitives.ts), with the peers and mutex baselines beside them. */
  primitives?(server: ServerHandle | undefined, ttlMs: number, holdsMs: readonly number[]): PrimitiveRun[];
  /** Server-side counters read before and after the scale run's hold (their deltas are reported). */
  scaleProbe?(server: ServerHandle | undefined): () => Promise<Record<string, number>>;
}

/** The member's lease counters: keep-alive messages received and leases granted (Prometheus /metrics). */
async function etcdLeaseCounters(server: ServerHandle): Promise<Record<string, number>> {
  const text = await (await fetch(`http://${server.host}:${server.port}/metrics`)).text();
  const sum = (pattern: RegExp): number => [...text.matchAll(pattern)].reduce((total, match) => total + Number(match[1]), 0);
  return {
    keepAlives: sum(/^grpc_server_msg_received_total\{[^}]*grpc_method="LeaseKeepAlive"[^}]*\} (\S+)$/gm),
    leasesGranted: sum(/^etcd_debugging_lease_granted_total (\S+)$/gm),
  };
}

/** The fixture starters the plans use (cli.ts passes them; tests could pass others). */
export interface Starters {
  readonly redis: () => Promise<ServerHandle>;
  readonly postgres: () => Promise<ServerHandle>;
  readonly memcached: () => Promise<ServerHandle>;
  readonly zookeeper: () => Promise<ServerHandle>;
  readonly etcd?: () => Promise<ServerHandle>;
  /** A Redis primary with one replica; stopping the handle stops both. */
  readonly redisReplicated?: () => Promise<ServerHandle>;
}

function subject(backend: string, mode: string, kind: SubjectKind, open: () => Promise<Mutex>): Subject {
  return { backend, mode, subject: kind, open };
}

/**
 * Runs acquire/release cycles for `ms` on a fresh server before any measurement: a just-started
 * JVM (ZooKeeper) runs several times slower until its JIT has compiled the request path, which
 * would penalise whichever subject happens to be measured first (here, the raw baseline); a new
 * PostgreSQL cluster likewise starts with cold caches.
 */
async function warmUp(open: () => Promise<Mutex>, ms: number): Promise<void> {
  const mutex = await open();
  try {
    const until = performance.now() + ms;
    for (let i = 0; performance.now() < until; i += 1) {
      const release = await mutex.acquire(`bench-warmup:${i % 8}`);
      await release();
    }
  } finally {
    await mutex.close();
  }
}

/** Starts a server and warms it; a failed warm-up stops the server again (cli.ts only stops what start() returned). */
async function startWarm(
  start: () => Promise<ServerHandle>,
  open: (server: ServerHandle) => Promise<Mutex>,
  ms: number,
): Promise<ServerHandle> {
  const server = await start();
  try {
    await warmUp(() => open(server), ms);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

const permits = semaphorePermits;
const sharedWorkers = semaphoreWorkers;

/**
 * The primitive rows of one Deadbolt URL whose mutex rows carry mode `mode`: uncontended permit,
 * read and write; 20 workers on a semaphore of 5; 20 workers on a read-write lock, 90% reads, and
 * the mutex in the same loop as its baseline. `peer`: the redis-semaphore Semaphore beside them.
 */
function primitiveRuns(
  backend: string,
  mode: string,
  url: string,
  ttlMs: number,
  holdsMs: readonly number[],
  peer?: () => Promise<Mutex>,
  handoff?: () => Promise<Mutex>,
): PrimitiveRun[] {
  const semaphore = subject(backend, `${mode} semaphore(${permits})`, 'deadbolt', () => openDeadboltSemaphore(url, ttlMs, permits));
  const readHeavy = subject(backend, `${mode} rw 90% reads`, 'deadbolt', () => openDeadboltReadWrite(url, ttlMs, 0.9));
  const mutex = subject(backend, mode, 'deadbolt', () => openDeadbolt(url, ttlMs));
  const peerSemaphore = peer && subject(backend, `Semaphore(${permits})`, 'redis-semaphore', peer);
  // The limit of a FIFO permit hand-off on that server: `permits` tokens in a list, BLPOP / LPUSH.
  const handoffSemaphore = handoff && subject(backend, `BLPOP/LPUSH ${permits} tokens`, 'token-handoff', handoff);
  const one = (s: Subject, workload: PrimitiveRun['workload']): PrimitiveRun => ({ subject: s, workload, workers: 1, holdMs: 0 });
  return [
    one(semaphore, 'permit-uncontended'),
    ...(peerSemaphore ? [one(peerSemaphore, 'permit-uncontended')] : []),
    one(
      subject(backend, `${mode} read`, 'deadbolt', () => openDeadboltReadWrite(url, ttlMs, 1)),
      'read-uncontended',
    ),
    one(
      subject(backend, `${mode} write`, 'deadbolt', () => openDeadboltReadWrite(url, ttlMs, 0)),
      'write-uncontended',
    ),
    ...holdsMs.flatMap((holdMs) => [
      { subject: semaphore, workload: 'semaphore-5x20' as const, workers: sharedWorkers, holdMs },
      ...(peerSemaphore ? [{ subject: peerSemaphore, workload: 'semaphore-5x20' as const, workers: sharedWorkers, holdMs }] : []),
      ...(handoffSemaphore ? [{ subject: handoffSemaphore, workload: 'semaphore-5x20' as const, workers: sharedWorkers, holdMs }] : []),
      { subject: readHeavy, workload: 'rw-90-10x20' as const, workers: sharedWorkers, holdMs },
      { subject: mutex, workload: 'rw-90-10x20' as const, workers: sharedWorkers, holdMs },
    ]),
  ];
}

function withMode(url: string, mode: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}mode=${mode}`;
}

export function backendPlans(starters: Starters): BackendPlan[] {
  return [
    {
      backend: 'memory',
      start: async () => undefined,
      subjects: (_, ttlMs) => [subject('memory', '-', 'deadbolt', () => openDeadbolt('memory://bench', ttlMs))],
      scaleUrls: () => [{ mode: '-', url: 'memory://bench-scale' }],
      primitives: (_, ttlMs, holdsMs) => primitiveRuns('memory', '-', 'memory://bench-primitives', ttlMs, holdsMs),
    },
    {
      backend: 'redis',
      adapterPackage: '@deadbolt/redis',
      start: starters.redis,
      subjects: (server, ttlMs) => {
        const url = server!.url;
        return [
          subject('redis', 'bare protocol', 'raw', () => openRawRedis(url, ttlMs)),
          subject('redis', 'BLPOP/LPUSH token', 'token-handoff', () => openRawTokenHandoff(url)),
          ...['setnx', 'fair', 'hash-reentrant', 'getset'].map((mode) =>
            subject('redis', mode, 'deadbolt', () => openDeadbolt(withMode(url, mode), ttlMs)),
          ),
          subject('redis', 'default settings', 'node-redlock', () => openNodeRedlock(url, ttlMs)),
          subject('redis', 'default settings', 'redis-semaphore', () => openRedisSemaphore(url, ttlMs)),
        ];
      },
      scaleUrls: (server) => ['setnx', 'fair', 'hash-reentrant'].map((mode) => ({ mode, url: withMode(server!.url, mode) })),
      primitives: (server, ttlMs, holdsMs) =>
        primitiveRuns(
          'redis',
          'fair',
          withMode(server!.url, 'fair'),
          ttlMs,
          holdsMs,
          () => openRedisSemaphorePermits(server!.url, ttlMs, permits),
          () => openRawTokenHandoff(server!.url, permits),
        ),
    },
    // The cost of `replicas=1` (WAIT for the replica on every grant and renewal), beside the same
    // mode without it, interleaved on the same primary-and-replica pair.
    ...(starters.redisReplicated === undefined
      ? []
      : [
          {
            backend: 'redis-replicated',
            adapterPackage: '@deadbolt/redis',
            start: starters.redisReplicated,
            subjects: (server: ServerHandle | undefined, ttlMs: number) => [
              subject('redis-replicated', 'setnx', 'deadbolt', () => openDeadbolt(withMode(server!.url, 'setnx'), ttlMs)),
              subject('redis-replicated', 'setnx replicas=1', 'deadbolt', () =>
                openDeadbolt(withMode(server!.url, 'setnx&replicas=1&replicaTimeoutMs=500'), ttlMs),
              ),
            ],
            scaleUrls: () => [],
          },
        ]),
    {
      backend: 'postgres',
      adapterPackage: '@deadbolt/postgres',
      start: () => startWarm(starters.postgres, (server) => openRawPostgres(server.url), 1_000),
      subjects: (server, ttlMs) => {
        const url = server!.url;
        return [
          // One raw subject for both shapes: try-lock (uncontended rows), then the blocking lock (contended rows).
          subject('postgres', 'advisory try, then blocking', 'raw', () => openRawPostgres(url)),
          ...['advisory', 'lease'].map((mode) => subject('postgres', mode, 'deadbolt', () => openDeadbolt(withMode(url, mode), ttlMs))),
        ];
      },
      scaleUrls: (server) => ['advisory', 'lease'].map((mode) => ({ mode, url: withMode(server!.url, mode) })),
    },
    {
      backend: 'memcached',
      adapterPackage: '@deadbolt/memcached',
      start: starters.memcached,
      subjects: (server, ttlMs) => {
        const url = server!.url;
        return [
          subject('memcached', 'add/delete', 'raw', () => openRawMemcached(url, ttlMs)),
          subject('memcached', '-', 'deadbolt', () => openDeadbolt(url, ttlMs)),
        ];
      },
      scaleUrls: (server) => [{ mode: '-', url: server!.url }],
      // Memcached expiries are whole seconds: a 1.5 s ttl would round, so scale with 3 s (renewal every 1 s).
      scale: { ttlMs: 3_000, why: 'memcached expiries are whole seconds' },
    },
    {
      backend: 'zookeeper',
      adapterPackage: '@deadbolt/zookeeper',
      start: () => startWarm(starters.zookeeper, (server) => openRawZooKeeper(server.url), 3_000),
      subjects: (server, ttlMs) => {
        const url = server!.url;
        return [
          subject('zookeeper', 'bare recipe', 'raw', () => openRawZooKeeper(url)),
          subject('zookeeper', '-', 'deadbolt', () => openDeadbolt(`${url}/deadbolt-bench`, ttlMs)),
        ];
      },
      scaleUrls: (server) => [{ mode: '-', url: `${server!.url}/deadbolt-bench-scale` }],
    },
    ...(starters.etcd === undefined
      ? []
      : [
          {
            backend: 'etcd',
            adapterPackage: '@deadbolt/etcd',
            start: starters.etcd,
            subjects: (server: ServerHandle | undefined, ttlMs: number) => {
              const url = server!.url;
              return [
                subject('etcd', 'bare recipe', 'raw', () => openRawEtcd(url)),
                subject('etcd', '-', 'deadbolt', () => openDeadbolt(`${url}/deadbolt-bench`, ttlMs)),
                subject('etcd', 'client.lock()', 'etcd3-lock', () => openEtcd3Lock(url)),
              ];
            },
            // Every lock of a client rides its one lease: the keep-alives are the etcd member's count.
            scaleUrls: (server: ServerHandle | undefined) => [{ mode: '-', url: `${server!.url}/deadbolt-bench-scale?sessionTtlMs=3000` }],
            // The lease that matters is the session's, whole seconds: ticks of 1 s (TTL/3) on a 3 s lease.
            scale: { ttlMs: 3_000, why: 'an etcd lock rides the session lease (sessionTtlMs=3000, whole seconds)' },
            scaleProbe: (server: ServerHandle | undefined) => () => etcdLeaseCounters(server!),
          },
        ]),
  ];
}
