import { InvalidArgumentError } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';

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
}

export const defaultCommandTimeoutMs = 2_000;
export const defaultDriftFactor = 0.01;
export const defaultWaiterLeaseMs = 3_000;
const defaultPort = 6379;

/** Query parameters a URL may carry. `prefix` belongs to core, which applies it before keys reach us. */
const urlParameters: ReadonlySet<string> = new Set(['mode', 'commandTimeoutMs', 'driftFactor', 'nodeTimeoutMs', 'waiterLeaseMs', 'cluster', 'prefix']);
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
]);

/**
 * Parses `redis://[user:pass@]host:port[,host2:port2...][/db]?mode=...` (or `rediss://`). Accepts the
 * raw text because WHATWG URL rejects a comma-separated host list with ports; a parsed URL works
 * for one host. Throws InvalidArgumentError without echoing the password.
 */
export function parseRedisUrl(input: string | URL): RedisBackendOptions {
  const text = typeof input === 'string' ? input : input.href;
  const match = /^(rediss?):\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(\?[^#]*)?$/i.exec(text);
  if (!match) throw new InvalidArgumentError('url', `"${redact(text)}" is not a redis:// or rediss:// URL`, { backend: 'redis' });
  const [, scheme = 'redis', userInfo, hostList = '', path = '', query = ''] = match;
  const options: Record<string, unknown> = { tls: scheme.toLowerCase() === 'rediss' };
  if (userInfo !== undefined && userInfo !== '') {
    const colon = userInfo.indexOf(':');
    const user = decodeURIComponent(colon < 0 ? userInfo : userInfo.slice(0, colon));
    if (colon >= 0) options.password = decodeURIComponent(userInfo.slice(colon + 1));
    if (user !== '') options.username = user;
  }
  if (hostList !== '') options.nodes = hostList.split(',').map((node) => parseNode(node));
  const database = path.replace(/^\//, '');
  if (database !== '') options.db = parseInteger('db', database, 0);
  const params = new URLSearchParams(query);
  for (const name of new Set(params.keys())) {
    if (!urlParameters.has(name)) {
      throw new InvalidArgumentError(`URL parameter "${name}"`, `unknown; redis:// takes ${[...urlParameters].join(', ')}`, { backend: 'redis' });
    }
  }
  const mode = params.get('mode');
  if (mode !== null) options.mode = mode;
  const timeout = params.get('commandTimeoutMs');
  if (timeout !== null) options.commandTimeoutMs = parseNumber('commandTimeoutMs', timeout);
  const drift = params.get('driftFactor');
  if (drift !== null) options.driftFactor = parseNumber('driftFactor', drift);
  const nodeTimeout = params.get('nodeTimeoutMs');
  if (nodeTimeout !== null) options.nodeTimeoutMs = parseNumber('nodeTimeoutMs', nodeTimeout);
  const waiterLease = params.get('waiterLeaseMs');
  if (waiterLease !== null) options.waiterLeaseMs = parseNumber('waiterLeaseMs', waiterLease);
  const cluster = params.get('cluster');
  if (cluster !== null) {
    if (cluster !== 'true' && cluster !== 'false') throw new InvalidArgumentError('cluster', `expected true or false, got "${cluster}"`, { backend: 'redis' });
    options.cluster = cluster === 'true';
  }
  return options as RedisBackendOptions;
}

/** Merges URL options with object options (the object wins) and validates everything. No I/O. */
export function resolveRedisOptions(url: string | URL | undefined, given: Readonly<Record<string, unknown>> = {}): ResolvedRedisOptions {
  for (const name of Object.keys(given)) {
    if (!objectOptions.has(name)) {
      throw new InvalidArgumentError(`option "${name}"`, `unknown; the redis options are ${[...objectOptions].join(', ')}`, { backend: 'redis' });
    }
  }
  const fromUrl = url === undefined ? {} : parseRedisUrl(url);
  const merged = { ...fromUrl, ...definedOnly(given) } as Record<string, unknown>;

  const mode = merged.mode ?? 'setnx';
  if (typeof mode !== 'string' || !(redisModes as readonly string[]).includes(mode)) {
    throw new InvalidArgumentError('mode', `"${String(mode)}" is not one of ${redisModes.join(', ')}`, { backend: 'redis' });
  }
  const nodes = toNodes(merged.nodes);
  const client = merged.client as Redis | Cluster | undefined;
  if (client !== undefined && !isIoredisLike(client)) throw new InvalidArgumentError('client', 'expected an ioredis Redis or Cluster instance', { backend: 'redis' });
  const clients = merged.clients as readonly Redis[] | undefined;
  if (clients !== undefined && (!Array.isArray(clients) || clients.length === 0 || !clients.every(isIoredisLike))) {
    throw new InvalidArgumentError('clients', 'expected a non-empty array of ioredis Redis instances', { backend: 'redis' });
  }
  if (mode === 'redlock' && client !== undefined) throw new InvalidArgumentError('client', "redlock needs one connection per master: pass 'clients' or 'nodes'", { backend: 'redis' });
  if (mode !== 'redlock' && clients !== undefined) throw new InvalidArgumentError('clients', "only the redlock mode takes several clients; pass 'client'", { backend: 'redis' });

  const commandTimeoutMs = positive('commandTimeoutMs', merged.commandTimeoutMs ?? defaultCommandTimeoutMs);
  const nodeTimeoutMs = merged.nodeTimeoutMs === undefined ? undefined : positive('nodeTimeoutMs', merged.nodeTimeoutMs);
  const waiterLeaseMs = positive('waiterLeaseMs', merged.waiterLeaseMs ?? defaultWaiterLeaseMs);
  if (waiterLeaseMs < 30) throw new InvalidArgumentError('waiterLeaseMs', `expected at least 30 ms (heartbeats run every third of it), got ${waiterLeaseMs}`, { backend: 'redis' });
  const driftFactor = merged.driftFactor ?? defaultDriftFactor;
  if (typeof driftFactor !== 'number' || !Number.isFinite(driftFactor) || driftFactor < 0 || driftFactor >= 0.5) {
    throw new InvalidArgumentError('driftFactor', `expected a number in [0, 0.5), got ${String(driftFactor)}`, { backend: 'redis' });
  }
  const now = merged.now ?? Date.now;
  if (typeof now !== 'function') throw new InvalidArgumentError('now', 'expected a function returning epoch milliseconds', { backend: 'redis' });
  const db = merged.db ?? 0;
  if (typeof db !== 'number' || !Number.isInteger(db) || db < 0) throw new InvalidArgumentError('db', `expected a non-negative integer, got ${String(db)}`, { backend: 'redis' });
  for (const name of ['username', 'password'] as const) {
    if (merged[name] !== undefined && typeof merged[name] !== 'string') throw new InvalidArgumentError(name, 'expected a string', { backend: 'redis' });
  }
  for (const name of ['cluster', 'tls'] as const) {
    if (merged[name] !== undefined && typeof merged[name] !== 'boolean') throw new InvalidArgumentError(name, 'expected true or false', { backend: 'redis' });
  }
  const cluster = (merged.cluster as boolean | undefined) ?? (mode !== 'redlock' && nodes.length > 1);
  if (cluster && mode === 'redlock') throw new InvalidArgumentError('cluster', 'redlock runs on independent masters, not on a Redis Cluster', { backend: 'redis' });
  if (cluster && db !== 0) throw new InvalidArgumentError('db', 'Redis Cluster has only database 0', { backend: 'redis' });

  return Object.freeze({
    mode: mode as RedisMode,
    nodes: Object.freeze(nodes.length > 0 || client !== undefined || clients !== undefined ? nodes : [{ host: '127.0.0.1', port: defaultPort }]),
    client,
    clients: clients === undefined ? undefined : Object.freeze([...clients]),
    cluster,
    username: merged.username as string | undefined,
    password: merged.password as string | undefined,
    db,
    tls: (merged.tls as boolean | undefined) ?? false,
    commandTimeoutMs,
    driftFactor,
    nodeTimeoutMs,
    now: now as () => number,
    waiterLeaseMs,
  });
}

function toNodes(value: unknown): RedisNodeAddress[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length === 0) throw new InvalidArgumentError('nodes', 'expected a non-empty array of "host:port" or { host, port }', { backend: 'redis' });
  return value.map((node: unknown) => {
    if (typeof node === 'string') return parseNode(node);
    if (node !== null && typeof node === 'object') {
      const { host, port } = node as { host?: unknown; port?: unknown };
      if (typeof host === 'string' && host !== '' && typeof port === 'number' && Number.isInteger(port) && port > 0 && port < 65536) {
        return Object.freeze({ host, port });
      }
    }
    throw new InvalidArgumentError('nodes', `bad node ${JSON.stringify(node)}; expected "host:port" or { host, port }`, { backend: 'redis' });
  });
}

function parseNode(text: string): RedisNodeAddress {
  // [v6addr]:port, host:port, or host alone.
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d+))?$/.exec(text.trim());
  if (!match) throw new InvalidArgumentError('nodes', `"${text}" is not host[:port]`, { backend: 'redis' });
  const host = match[1] ?? match[2] ?? '';
  const port = match[3] === undefined ? defaultPort : Number(match[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new InvalidArgumentError('nodes', `bad port in "${text}"`, { backend: 'redis' });
  return Object.freeze({ host, port });
}

function parseNumber(name: string, text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new InvalidArgumentError(name, `"${text}" is not a number`, { backend: 'redis' });
  return value;
}

function parseInteger(name: string, text: string, min: number): number {
  const value = parseNumber(name, text);
  if (!Number.isInteger(value) || value < min) throw new InvalidArgumentError(name, `"${text}" is not an integer >= ${min}`, { backend: 'redis' });
  return value;
}

function positive(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > 2 ** 31 - 1) {
    throw new InvalidArgumentError(name, `expected a positive number of milliseconds, got ${String(value)}`, { backend: 'redis' });
  }
  return value;
}

function definedOnly(record: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}

function isIoredisLike(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as { defineCommand?: unknown }).defineCommand === 'function';
}

/** Masks everything between the scheme and the LAST '@': a bad password may itself contain '/' or '@'. */
function redact(text: string): string {
  return text.replace(/^([^:/?#]*:(?:\/\/)?).*@/s, '$1***@');
}
