import {
  booleanOption,
  choiceOption,
  definedEntries,
  durationOption,
  fractionOption,
  hostListOption,
  integerOption,
  InvalidArgumentError,
  parseHostList,
  rejectUnknownNames,
  splitBackendUrl,
  stringOption,
  urlParameters,
} from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import type { ReplicaWait } from './replica-ack.js';

/** The lock algorithms this package implements (one file each under modes/). */
export type RedisMode = 'setnx' | 'fair' | 'getset' | 'hash-reentrant' | 'redlock';

export const redisModes: readonly RedisMode[] = Object.freeze(['setnx', 'fair', 'getset', 'hash-reentrant', 'redlock']);

export interface RedisNodeAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * The object form, as given in `createLockClient({ backend: 'redis', options: { ... } })` or beside
 * a URL. Every field is optional; a URL supplies the rest.
 */
export interface RedisBackendOptions {
  /** Which algorithm. Default 'setnx'. */
  readonly mode?: RedisMode;
  /**
   * Servers as `host:port` strings or objects. One node: a single server. Several: RedLock's
   * independent masters in 'redlock' mode, Redis Cluster seed nodes in every other mode.
   */
  readonly nodes?: readonly (string | RedisNodeAddress)[];
  /**
   * An existing ioredis connection (a `Redis` or a `Cluster`) to use instead of opening one. The
   * backend defines its scripts on it and never closes it: its owner does. Not for 'redlock'.
   */
  readonly client?: Redis | Cluster;
  /** Existing ioredis connections, one per RedLock master. 'redlock' only; never closed by the backend. */
  readonly clients?: readonly Redis[];
  /** Treat the nodes as a Redis Cluster even when there is only one seed node. */
  readonly cluster?: boolean;
  readonly username?: string;
  readonly password?: string;
  /** Database index (standalone servers only). */
  readonly db?: number;
  /** TLS (the `rediss:` scheme sets it). */
  readonly tls?: boolean;
  /** Deadline of one command; a dead or frozen server surfaces as BackendUnavailableError after it. Default 2000. */
  readonly commandTimeoutMs?: number;
  /** RedLock: clock drift allowance as a fraction of the ttl (plus 2 ms), as in the Redlock spec. Default 0.01. */
  readonly driftFactor?: number;
  /** RedLock: deadline of one node's answer. Default: a fifth of the ttl, at least 50 ms, at most commandTimeoutMs. */
  readonly nodeTimeoutMs?: number;
  /** getset: the clock that decides expiry (the algorithm trusts client clocks). Default Date.now. Tests inject skew here. */
  readonly now?: () => number;
  /** fair: how long a silent waiter keeps its place in the queue (server clock); it heartbeats every third of it. Default 3000. */
  readonly waiterLeaseMs?: number;
  /**
   * Redis Sentinel: the master's name. The nodes are then the Sentinels, which ioredis asks where the
   * master is (and asks again after a failover). `redis+sentinel://s1:26379,s2:26379?sentinel=mymaster`
   * or `redis://...?sentinel=mymaster`. Not for 'redlock' or a Cluster.
   */
  readonly sentinel?: string;
  /** Redis Sentinel: the Sentinels' own password (AUTH), when they require one; `password` is the master's. */
  readonly sentinelPassword?: string;
  /**
   * setnx and hash-reentrant: every grant and renewal waits (Redis WAIT, in the same round trip) until
   * this many replicas have it. A grant fewer acknowledge is taken back and the acquire fails with
   * ReplicaAcknowledgementError; such a renewal fails (the lock is reported lost). Default 0 (no wait).
   */
  readonly replicas?: number;
  /** How long WAIT waits for the replicas, below commandTimeoutMs. Default 100. */
  readonly replicaTimeoutMs?: number;
}

/** What the backend runs on: validated, with defaults, frozen. */
export interface ResolvedRedisOptions {
  readonly mode: RedisMode;
  readonly nodes: readonly RedisNodeAddress[];
  readonly client: Redis | Cluster | undefined;
  readonly clients: readonly Redis[] | undefined;
  readonly cluster: boolean;
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly db: number;
  readonly tls: boolean;
  readonly commandTimeoutMs: number;
  readonly driftFactor: number;
  readonly nodeTimeoutMs: number | undefined;
  readonly now: () => number;
  readonly waiterLeaseMs: number;
  /** The Sentinel master name; undefined without Sentinel. */
  readonly sentinel: string | undefined;
  readonly sentinelPassword: string | undefined;
  /** `replicas` and `replicaTimeoutMs`; undefined without replicas. */
  readonly replicaWait: ReplicaWait | undefined;
}

export const defaultCommandTimeoutMs = 2_000;
export const defaultDriftFactor = 0.01;
export const defaultWaiterLeaseMs = 3_000;
export const defaultReplicaTimeoutMs = 100;
const defaultPort = 6379;
const defaultSentinelPort = 26379;
const backend = 'redis';

/** Query parameters a URL may carry. `prefix` belongs to core, which applies it before keys reach us. */
const urlParameterNames: ReadonlySet<string> = new Set([
  'mode',
  'commandTimeoutMs',
  'driftFactor',
  'nodeTimeoutMs',
  'waiterLeaseMs',
  'cluster',
  'sentinel',
  'replicas',
  'replicaTimeoutMs',
  'prefix',
]);
const objectOptions: ReadonlySet<string> = new Set([
  'mode',
  'nodes',
  'client',
  'clients',
  'cluster',
  'username',
  'password',
  'db',
  'tls',
  'commandTimeoutMs',
  'driftFactor',
  'nodeTimeoutMs',
  'now',
  'waiterLeaseMs',
  'sentinel',
  'sentinelPassword',
  'replicas',
  'replicaTimeoutMs',
]);

/**
 * Parses `redis://[user:pass@]host:port[,host2:port2...][/db]?mode=...` (or `rediss://`). Accepts the
 * raw text because WHATWG URL rejects a comma-separated host list with ports; a parsed URL works
 * for one host. Throws InvalidArgumentError without echoing the password (the adapter kit's rules).
 */
export function parseRedisUrl(input: string | URL): RedisBackendOptions {
  const url = splitBackendUrl(input, backend, ['redis', 'rediss', 'redis+sentinel', 'rediss+sentinel']);
  const viaSentinel = url.scheme.endsWith('+sentinel');
  const options: Record<string, unknown> = {
    tls: url.scheme.startsWith('rediss'),
    ...urlParameters(url.params, urlParameterNames, backend),
  };
  if (viaSentinel && options.sentinel === undefined) {
    throw new InvalidArgumentError('sentinel', `${url.scheme}:// needs the master's name: ?sentinel=<masterName>`, { backend });
  }
  if (url.username !== undefined) options.username = url.username;
  if (url.password !== undefined) options.password = url.password;
  const sentinels = viaSentinel || options.sentinel !== undefined;
  if (url.hosts !== '') options.nodes = parseHostList(url.hosts, sentinels ? defaultSentinelPort : defaultPort, 'nodes', backend);
  const database = url.path.replace(/^\//, '');
  if (database !== '') options.db = database;
  return options as RedisBackendOptions;
}

/** Merges URL options with object options (the object wins) and validates everything. No I/O. */
export function resolveRedisOptions(url: string | URL | undefined, given: Readonly<Record<string, unknown>> = {}): ResolvedRedisOptions {
  rejectUnknownNames('option', Object.keys(given), objectOptions, backend);
  const fromUrl = url === undefined ? {} : parseRedisUrl(url);
  const merged = { ...fromUrl, ...definedEntries(given) } as Record<string, unknown>;

  const mode = choiceOption('mode', merged.mode ?? 'setnx', redisModes, backend);
  const nodes = merged.nodes === undefined ? [] : hostListOption('nodes', merged.nodes, defaultPort, backend);
  const client = merged.client as Redis | Cluster | undefined;
  if (client !== undefined && !isIoredisLike(client))
    throw new InvalidArgumentError('client', 'expected an ioredis Redis or Cluster instance', { backend });
  const clients = merged.clients as readonly Redis[] | undefined;
  if (clients !== undefined && (!Array.isArray(clients) || clients.length === 0 || !clients.every(isIoredisLike))) {
    throw new InvalidArgumentError('clients', 'expected a non-empty array of ioredis Redis instances', { backend });
  }
  if (mode === 'redlock' && client !== undefined)
    throw new InvalidArgumentError('client', "redlock needs one connection per master: pass 'clients' or 'nodes'", { backend });
  if (mode !== 'redlock' && clients !== undefined)
    throw new InvalidArgumentError('clients', "only the redlock mode takes several clients; pass 'client'", { backend });

  const commandTimeoutMs = durationOption('commandTimeoutMs', merged.commandTimeoutMs ?? defaultCommandTimeoutMs, backend);
  const nodeTimeoutMs = merged.nodeTimeoutMs === undefined ? undefined : durationOption('nodeTimeoutMs', merged.nodeTimeoutMs, backend);
  const waiterLeaseMs = durationOption('waiterLeaseMs', merged.waiterLeaseMs ?? defaultWaiterLeaseMs, backend);
  if (waiterLeaseMs < 30)
    throw new InvalidArgumentError('waiterLeaseMs', `expected at least 30 ms (heartbeats run every third of it), got ${waiterLeaseMs}`, {
      backend,
    });
  const driftFactor = fractionOption('driftFactor', merged.driftFactor ?? defaultDriftFactor, backend, 0, 0.5);
  const now = merged.now ?? Date.now;
  if (typeof now !== 'function') throw new InvalidArgumentError('now', 'expected a function returning epoch milliseconds', { backend });
  const db = integerOption('db', merged.db ?? 0, backend, 0, 2 ** 31 - 1);
  const username = merged.username === undefined ? undefined : stringOption('username', merged.username, backend);
  const password = merged.password === undefined ? undefined : stringOption('password', merged.password, backend);
  const tls = merged.tls === undefined ? false : booleanOption('tls', merged.tls, backend);
  const viaSentinel = merged.sentinel !== undefined;
  const cluster =
    merged.cluster === undefined
      ? mode !== 'redlock' && !viaSentinel && nodes.length > 1
      : booleanOption('cluster', merged.cluster, backend);
  if (cluster && mode === 'redlock')
    throw new InvalidArgumentError('cluster', 'redlock runs on independent masters, not on a Redis Cluster', { backend });
  if (cluster && db !== 0) throw new InvalidArgumentError('db', 'Redis Cluster has only database 0', { backend });
  const sentinel = merged.sentinel === undefined ? undefined : stringOption('sentinel', merged.sentinel, backend);
  const sentinelPassword =
    merged.sentinelPassword === undefined ? undefined : stringOption('sentinelPassword', merged.sentinelPassword, backend);
  if (sentinel !== undefined) {
    if (sentinel === '') throw new InvalidArgumentError('sentinel', "expected the master's name", { backend });
    if (mode === 'redlock')
      throw new InvalidArgumentError('sentinel', 'redlock runs on independent masters, not behind a Sentinel', { backend });
    if (cluster) throw new InvalidArgumentError('sentinel', 'a Redis Cluster has no Sentinel', { backend });
    if (client !== undefined) throw new InvalidArgumentError('sentinel', "give either 'client' or the Sentinels, not both", { backend });
  }

  const replicaWait = resolveReplicaWait(merged, mode, commandTimeoutMs);

  return Object.freeze({
    mode,
    nodes: Object.freeze(
      nodes.length > 0 || client !== undefined || clients !== undefined
        ? nodes
        : [{ host: '127.0.0.1', port: viaSentinel ? defaultSentinelPort : defaultPort }],
    ),
    client,
    clients: clients === undefined ? undefined : Object.freeze([...clients]),
    cluster,
    username,
    password,
    db,
    tls,
    commandTimeoutMs,
    driftFactor,
    nodeTimeoutMs,
    now: now as () => number,
    waiterLeaseMs,
    sentinel,
    sentinelPassword,
    replicaWait,
  });
}

/** Modes whose grants the acquirer's own script writes, so the acquirer's WAIT covers them. */
const replicaModes: readonly RedisMode[] = ['setnx', 'hash-reentrant'];

function resolveReplicaWait(merged: Record<string, unknown>, mode: RedisMode, commandTimeoutMs: number): ReplicaWait | undefined {
  const replicas = integerOption('replicas', merged.replicas ?? 0, backend, 0, 100);
  const timeoutMs = durationOption('replicaTimeoutMs', merged.replicaTimeoutMs ?? defaultReplicaTimeoutMs, backend);
  if (replicas === 0) return undefined;
  if (!replicaModes.includes(mode))
    throw new InvalidArgumentError(
      'replicas',
      `mode ${mode} does not wait for replicas; use mode=setnx or mode=hash-reentrant (fair grants waiters from another client's script, redlock has no replicas)`,
      { backend },
    );
  // WAIT 0 waits forever; one at or past the command timeout is cut off by it and reads as an outage.
  if (timeoutMs < 1 || timeoutMs >= commandTimeoutMs)
    throw new InvalidArgumentError(
      'replicaTimeoutMs',
      `expected at least 1 ms and below commandTimeoutMs (${commandTimeoutMs}), got ${timeoutMs}`,
      {
        backend,
      },
    );
  return Object.freeze({ replicas, timeoutMs });
}

function isIoredisLike(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as { defineCommand?: unknown }).defineCommand === 'function';
}
