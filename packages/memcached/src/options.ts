import { InvalidArgumentError } from '@deadbolt/core/adapter';
import type { Client } from 'memjs';

export interface MemcachedServerAddress {
  readonly host: string;
  readonly port: number;
}

/** The object form: `createLockClient({ backend: 'memcached', options: { servers, timeoutMs } })`. */
export interface MemcachedBackendOptions {
  /**
   * Servers as `host:port` strings or objects. memjs shards keys across them by hash; a lost server
   * loses the locks it held (AP), and its keys are NOT failed over (failover would let two servers
   * each grant the same key).
   */
  readonly servers?: readonly (string | MemcachedServerAddress)[];
  /** Deadline of one operation; a dead or frozen server becomes BackendUnavailableError after it. Default 2000. */
  readonly timeoutMs?: number;
  /** An existing memjs client to use instead of opening one. The backend never closes it: its owner does. */
  readonly client?: Client;
}

export interface ResolvedMemcachedOptions {
  readonly servers: readonly MemcachedServerAddress[];
  readonly timeoutMs: number;
  readonly client: Client | undefined;
}

export const defaultTimeoutMs = 2_000;
const defaultPort = 11211;
const backend = 'memcached';

/** `prefix` belongs to core, which applies it before keys reach us. */
const urlParameters: ReadonlySet<string> = new Set(['timeoutMs', 'prefix']);
const objectOptions: ReadonlySet<string> = new Set(['servers', 'timeoutMs', 'client']);

/**
 * Parses `memcached://host:port[,host2:port2...]?timeoutMs=...`. Takes the raw text because WHATWG
 * URL rejects a comma-separated host list. Credentials (SASL) are not supported and are refused
 * without being echoed.
 */
export function parseMemcachedUrl(input: string | URL): MemcachedBackendOptions {
  const text = typeof input === 'string' ? input : input.href;
  const match = /^memcached:\/\/([^/?#]*)\/?(\?[^#]*)?$/i.exec(text);
  if (!match) throw new InvalidArgumentError('url', `"${text.replace(/\/\/[^@/]*@/, '//***@')}" is not a memcached://host:port URL`, { backend });
  const [, hostList = '', query = ''] = match;
  if (hostList.includes('@')) throw new InvalidArgumentError('url', 'credentials are not supported by the memcached backend', { backend });
  const options: Record<string, unknown> = {};
  if (hostList !== '') options.servers = hostList.split(',').map(parseServer);
  const params = new URLSearchParams(query);
  for (const name of new Set(params.keys())) {
    if (!urlParameters.has(name)) {
      throw new InvalidArgumentError(`URL parameter "${name}"`, `unknown; memcached:// takes ${[...urlParameters].join(', ')}`, { backend });
    }
  }
  const timeout = params.get('timeoutMs');
  if (timeout !== null) {
    const value = Number(timeout);
    if (timeout.trim() === '' || !Number.isFinite(value)) throw new InvalidArgumentError('timeoutMs', `"${timeout}" is not a number`, { backend });
    options.timeoutMs = value;
  }
  return options as MemcachedBackendOptions;
}

/** Merges URL options with object options (the object wins) and validates everything. No I/O. */
export function resolveMemcachedOptions(url: string | URL | undefined, given: Readonly<Record<string, unknown>> = {}): ResolvedMemcachedOptions {
  for (const name of Object.keys(given)) {
    if (!objectOptions.has(name)) {
      throw new InvalidArgumentError(`option "${name}"`, `unknown; the memcached options are ${[...objectOptions].join(', ')}`, { backend });
    }
  }
  const fromUrl = url === undefined ? {} : parseMemcachedUrl(url);
  const merged = { ...fromUrl, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) } as Record<string, unknown>;
  const servers = toServers(merged.servers);
  const timeoutMs = merged.timeoutMs ?? defaultTimeoutMs;
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > 2 ** 31 - 1) {
    throw new InvalidArgumentError('timeoutMs', `expected a positive number of milliseconds, got ${String(timeoutMs)}`, { backend });
  }
  const client = merged.client as Client | undefined;
  if (client !== undefined && (typeof client !== 'object' || client === null || typeof (client as { perform?: unknown }).perform !== 'function')) {
    throw new InvalidArgumentError('client', 'expected a memjs Client', { backend });
  }
  return Object.freeze({
    servers: Object.freeze(servers.length > 0 ? servers : [{ host: '127.0.0.1', port: defaultPort }]),
    timeoutMs,
    client,
  });
}

function toServers(value: unknown): MemcachedServerAddress[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length === 0) throw new InvalidArgumentError('servers', 'expected a non-empty array of "host:port" or { host, port }', { backend });
  return value.map((server: unknown) => {
    if (typeof server === 'string') return parseServer(server);
    if (server !== null && typeof server === 'object') {
      const { host, port } = server as { host?: unknown; port?: unknown };
      if (typeof host === 'string' && host !== '' && typeof port === 'number' && Number.isInteger(port) && port > 0 && port < 65536) return Object.freeze({ host, port });
    }
    throw new InvalidArgumentError('servers', `bad server ${JSON.stringify(server)}; expected "host:port" or { host, port }`, { backend });
  });
}

function parseServer(text: string): MemcachedServerAddress {
  const match = /^(?:\[([^\]]+)\]|([^:[\]\s]+))(?::(\d+))?$/.exec(text.trim());
  if (!match) throw new InvalidArgumentError('servers', `"${text}" is not host[:port]`, { backend });
  const host = match[1] ?? match[2] ?? '';
  const port = match[3] === undefined ? defaultPort : Number(match[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new InvalidArgumentError('servers', `bad port in "${text}"`, { backend });
  return Object.freeze({ host, port });
}
