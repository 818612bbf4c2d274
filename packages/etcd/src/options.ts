import {
  definedEntries,
  durationOption,
  type HostAddress,
  InvalidArgumentError,
  parseHostList,
  rejectUnknownNames,
  splitBackendUrl,
  stringOption,
  urlParameters,
} from '@deadbolt/core/adapter';

/** The object form (`createLockClient({ backend: 'etcd', options: { ... } })`). */
export interface EtcdBackendOptions {
  /** `host:port,host:port` (default port 2379). */
  readonly hosts?: string;
  /** TLS to every member (what `etcds://` means). Default false. */
  readonly tls?: boolean;
  /** etcd authentication (`etcdctl --user`). Never shown in an error. */
  readonly username?: string;
  readonly password?: string;
  /** Prepended to every key, as Go's `namespace.NewKV` does (`/billing` in the URL: `billing/`). Default none. */
  readonly namespace?: string;
  /** How long to wait for a connection before BackendUnavailableError. Default 5000. */
  readonly dialTimeoutMs?: number;
  /** Deadline of one etcd call (txn, range, grant). Default 5000. */
  readonly callTimeoutMs?: number;
  /**
   * The TTL of the client's one lease (etcd counts whole seconds: rounded up). Every hold of the
   * client rides that lease; it is what a crashed client's locks outlive it by. Default 10000.
   */
  readonly sessionTtlMs?: number;
}

export interface ResolvedEtcdOptions {
  readonly hosts: readonly HostAddress[];
  readonly tls: boolean;
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly namespace: string;
  readonly dialTimeoutMs: number;
  readonly callTimeoutMs: number;
  /** Whole seconds, as the lease is granted. */
  readonly sessionTtlSeconds: number;
}

const backend = 'etcd';
const defaultPort = 2379;
const defaults = { dialTimeoutMs: 5_000, callTimeoutMs: 5_000, sessionTtlMs: 10_000 } as const;

/** `prefix` belongs to core (it prefixes keys before they reach us): accepted and ignored. */
const urlParameterNames: ReadonlySet<string> = new Set(['dialTimeoutMs', 'callTimeoutMs', 'sessionTtlMs', 'prefix']);
const objectOptions: ReadonlySet<string> = new Set([
  'hosts',
  'tls',
  'username',
  'password',
  'namespace',
  'dialTimeoutMs',
  'callTimeoutMs',
  'sessionTtlMs',
  'prefix',
]);

/**
 * Parses `etcd://[user:password@]h1:2379,h2:2379[/namespace][?callTimeoutMs=..]` (`etcds://` for TLS).
 * The WHATWG parser keeps only the first host of a list, so this reads the text as written.
 */
export function parseEtcdUrl(text: string): Record<string, unknown> {
  const url = splitBackendUrl(text, backend, ['etcd', 'etcds']);
  if (url.hosts === '') throw new InvalidArgumentError('url', `no host in the ${url.scheme}:// URL`, { backend });
  if ((url.username === undefined) !== (url.password === undefined))
    throw new InvalidArgumentError('url', `etcd authentication needs both a user name and a password in the ${url.scheme}:// URL`, {
      backend,
    });
  const result: Record<string, unknown> = {
    hosts: url.hosts,
    tls: url.scheme === 'etcds',
    ...urlParameters(url.params, urlParameterNames, backend),
  };
  if (url.username !== undefined) result['username'] = url.username;
  if (url.password !== undefined) result['password'] = url.password;
  if (url.path !== '' && url.path !== '/') {
    try {
      result['namespace'] = `${decodeURIComponent(url.path.slice(1)).replace(/\/+$/, '')}/`;
    } catch {
      throw new InvalidArgumentError('namespace', `malformed percent-encoding in the ${url.scheme}:// path`, { backend });
    }
  }
  return result;
}

/** Merges the URL and the object form (the object wins), validates everything, fills defaults. No I/O. */
export function resolveEtcdOptions(url: string | URL | undefined, options: Readonly<Record<string, unknown>> = {}): ResolvedEtcdOptions {
  rejectUnknownNames('option', Object.keys(options), objectOptions, backend);
  const fromUrl = url === undefined ? {} : parseEtcdUrl(typeof url === 'string' ? url : url.href);
  const merged: Record<string, unknown> = { ...fromUrl, ...definedEntries(options) };
  const hosts = merged['hosts'];
  if (typeof hosts !== 'string' || hosts === '')
    throw new InvalidArgumentError('hosts', 'give an etcd:// URL or a hosts option', { backend });
  const tls = merged['tls'] ?? false;
  if (typeof tls !== 'boolean') throw new InvalidArgumentError('tls', 'must be true or false', { backend });
  const username = merged['username'] === undefined ? undefined : stringOption('username', merged['username'], backend);
  // The password is never echoed: only its type is checked.
  const password = merged['password'];
  if (password !== undefined && typeof password !== 'string') throw new InvalidArgumentError('password', 'must be a string', { backend });
  if ((username === undefined) !== (password === undefined))
    throw new InvalidArgumentError('username', 'etcd authentication needs both username and password', { backend });
  const sessionTtlMs = durationOption('sessionTtlMs', merged['sessionTtlMs'] ?? defaults.sessionTtlMs, backend);
  if (sessionTtlMs < 1_000)
    throw new InvalidArgumentError('sessionTtlMs', `${sessionTtlMs} is below 1000: etcd leases count whole seconds`, { backend });
  return Object.freeze({
    hosts: Object.freeze(parseHostList(hosts, defaultPort, 'hosts', backend)),
    tls,
    username,
    password,
    namespace: merged['namespace'] === undefined ? '' : stringOption('namespace', merged['namespace'], backend),
    dialTimeoutMs: durationOption('dialTimeoutMs', merged['dialTimeoutMs'] ?? defaults.dialTimeoutMs, backend),
    callTimeoutMs: durationOption('callTimeoutMs', merged['callTimeoutMs'] ?? defaults.callTimeoutMs, backend),
    sessionTtlSeconds: Math.ceil(sessionTtlMs / 1_000),
  });
}
