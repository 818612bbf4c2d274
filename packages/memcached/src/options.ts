import {
  definedEntries,
  durationOption,
  hostListOption,
  InvalidArgumentError,
  parseHostList,
  rejectUnknownNames,
  splitBackendUrl,
  urlParameters,
} from '@deadbolt/core/adapter';
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
const urlParameterNames: ReadonlySet<string> = new Set(['timeoutMs', 'prefix']);
const objectOptions: ReadonlySet<string> = new Set(['servers', 'timeoutMs', 'client']);

/**
 * Parses `memcached://host:port[,host2:port2...]?timeoutMs=...`. Takes the raw text because WHATWG
 * URL rejects a comma-separated host list. Credentials (SASL) are not supported and are refused
 * without being echoed.
 */
export function parseMemcachedUrl(input: string | URL): MemcachedBackendOptions {
  const url = splitBackendUrl(input, backend, ['memcached']);
  if (url.username !== undefined || url.password !== undefined) {
    throw new InvalidArgumentError('url', 'credentials are not supported by the memcached backend', { backend });
  }
  if (url.path !== '' && url.path !== '/') throw new InvalidArgumentError('url', 'a memcached:// URL has no path', { backend });
  const options: Record<string, unknown> = urlParameters(url.params, urlParameterNames, backend);
  if (url.hosts !== '') options.servers = parseHostList(url.hosts, defaultPort, 'servers', backend);
  return options as MemcachedBackendOptions;
}

/** Merges URL options with object options (the object wins) and validates everything. No I/O. */
export function resolveMemcachedOptions(
  url: string | URL | undefined,
  given: Readonly<Record<string, unknown>> = {},
): ResolvedMemcachedOptions {
  rejectUnknownNames('option', Object.keys(given), objectOptions, backend);
  const fromUrl = url === undefined ? {} : parseMemcachedUrl(url);
  const merged = { ...fromUrl, ...definedEntries(given) } as Record<string, unknown>;
  const servers = merged.servers === undefined ? [] : hostListOption('servers', merged.servers, defaultPort, backend);
  const timeoutMs = durationOption('timeoutMs', merged.timeoutMs ?? defaultTimeoutMs, backend);
  const client = merged.client as Client | undefined;
  if (
    client !== undefined &&
    (typeof client !== 'object' || client === null || typeof (client as { perform?: unknown }).perform !== 'function')
  ) {
    throw new InvalidArgumentError('client', 'expected a memjs Client', { backend });
  }
  return Object.freeze({
    servers: Object.freeze(servers.length > 0 ? servers : [{ host: '127.0.0.1', port: defaultPort }]),
    timeoutMs,
    client,
  });
}
