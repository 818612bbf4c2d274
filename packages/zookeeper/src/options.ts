import { InvalidArgumentError } from '@deadbolt/core/adapter';

/**
 * When a held lock is reported lost. ZooKeeper itself only ends a lock when the session EXPIRES; a
 * disconnection (Curator's SUSPENDED) leaves it in doubt. 'expired' (default) fires `onLost` on
 * session expiry, or when the client has been disconnected for a whole session timeout (the server
 * must have expired the session by then: Curator 3's simulated expiration). 'suspended' fires it at
 * the first disconnection, Curator's StandardConnectionStateErrorPolicy: safest, but a leader
 * election then costs every holder its lock.
 */
export type ZooKeeperLostOn = 'expired' | 'suspended';

/** The object form (`createLockClient({ backend: 'zookeeper', options: { ... } })`). */
export interface ZooKeeperBackendOptions {
  /** `host:port,host:port` (ZooKeeper's connect string, without chroot). */
  readonly connectString?: string;
  /** Where lock nodes live: key K is the lock at `<basePath>/<encoded K>`. Default `/deadbolt/locks`. */
  readonly basePath?: string;
  /** Requested session timeout (the server clamps it to 2..20 ticks). Default 10000. */
  readonly sessionTimeoutMs?: number;
  /** How long to wait for a session before BackendUnavailableError. Default 5000. */
  readonly connectTimeoutMs?: number;
  /** Deadline of one ZooKeeper request (create, getChildren, delete...). Default 5000. */
  readonly operationTimeoutMs?: number;
  /** See ZooKeeperLostOn. Default 'expired'. */
  readonly lostOn?: ZooKeeperLostOn;
  /**
   * A ZooKeeper chroot (what `host:port/chroot` means to other clients), prepended to basePath:
   * chroot `/apps/billing` puts key K at `/apps/billing/deadbolt/locks/K`. Applied client-side.
   */
  readonly chroot?: string;
}

export interface ResolvedZooKeeperOptions {
  readonly connectString: string;
  readonly basePath: string;
  readonly sessionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly operationTimeoutMs: number;
  readonly lostOn: ZooKeeperLostOn;
  /** How long after a release an emptied lock parent is deleted (0: at once). */
  readonly parentCleanupDelayMs: number;
}

export const defaultBasePath = '/deadbolt/locks';
// parentCleanupDelayMs: a key used in a loop keeps its parent instead of deleting and re-creating it every cycle.
const defaults = { sessionTimeoutMs: 10_000, connectTimeoutMs: 5_000, operationTimeoutMs: 5_000, parentCleanupDelayMs: 1_000 } as const;
const defaultPort = 2181;

/** `prefix` belongs to core (it prefixes keys before they reach us), so it is accepted and ignored. */
const urlParameters: ReadonlySet<string> = new Set(['sessionTimeoutMs', 'connectTimeoutMs', 'operationTimeoutMs', 'lostOn', 'parentCleanupDelayMs', 'prefix']);
const objectOptions: ReadonlySet<string> = new Set(['connectString', 'basePath', 'sessionTimeoutMs', 'connectTimeoutMs', 'operationTimeoutMs', 'lostOn', 'parentCleanupDelayMs', 'prefix', 'chroot']);

function positiveInteger(name: string, value: unknown): number {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number <= 0) {
    throw new InvalidArgumentError(name, `expected a positive integer number of milliseconds, got ${JSON.stringify(value)}`);
  }
  return number;
}

function nonNegativeInteger(name: string, value: unknown): number {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < 0) {
    throw new InvalidArgumentError(name, `expected 0 or a positive integer number of milliseconds, got ${JSON.stringify(value)}`);
  }
  return number;
}

function lostOn(value: unknown): ZooKeeperLostOn {
  if (value === 'expired' || value === 'suspended') return value;
  throw new InvalidArgumentError('lostOn', `expected 'expired' or 'suspended', got ${JSON.stringify(value)}`);
}

/** Validates a ZooKeeper path: absolute, no empty, '.' or '..' segment, no trailing slash. */
export function validateBasePath(path: string, name = 'basePath'): string {
  const problem =
    !path.startsWith('/') ? 'must start with "/"'
    : path.length > 1 && path.endsWith('/') ? 'must not end with "/"'
    : path.split('/').slice(1).some((segment) => segment === '' || segment === '.' || segment === '..') && path !== '/' ? 'has an empty, "." or ".." segment'
    : /[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]/u.test(path) ? 'contains a character ZooKeeper does not allow in paths'
    : undefined;
  if (problem !== undefined) throw new InvalidArgumentError(name, `"${path}" ${problem}`);
  return path === '/' ? '' : path;
}

function validateConnectString(text: string): string {
  const hosts = text.split(',');
  for (const host of hosts) {
    const match = /^(\[[0-9a-fA-F:.]+\]|[^:\s/[\]]+)(?::(\d{1,5}))?$/.exec(host);
    if (!match || (match[2] !== undefined && (Number(match[2]) < 1 || Number(match[2]) > 65535))) {
      throw new InvalidArgumentError('connectString', `"${host}" is not host or host:port`);
    }
  }
  return hosts.map((host) => (/:\d+$/.test(host) && !host.endsWith(']') ? host : `${host}:${defaultPort}`)).join(',');
}

/**
 * Parses `zookeeper://host1:2181,host2:2181/base/path?sessionTimeoutMs=..`. The WHATWG URL parser
 * keeps only the first host of a list, so this reads the text as written (BackendConfig.urlText).
 */
export function parseZooKeeperUrl(text: string): Record<string, unknown> {
  const match = /^zookeeper:\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?$/.exec(text);
  if (!match) throw new InvalidArgumentError('url', 'expected zookeeper://host:port[,host:port...][/base/path][?options]');
  const [, authority = '', path = '', query = ''] = match;
  if (authority.includes('@')) throw new InvalidArgumentError('url', 'credentials in a zookeeper:// URL are not supported');
  if (authority === '') throw new InvalidArgumentError('url', 'no host in the zookeeper:// URL');
  const result: Record<string, unknown> = { connectString: authority };
  if (path !== '' && path !== '/') result['basePath'] = decodeURIComponent(path);
  for (const [name, value] of new URLSearchParams(query)) {
    if (!urlParameters.has(name)) {
      throw new InvalidArgumentError(`URL parameter "${name}"`, `unknown; the zookeeper:// parameters are ${[...urlParameters].join(', ')}`);
    }
    if (name !== 'prefix') result[name] = value;
  }
  return result;
}

/** Merges the URL and the object form (the object wins), validates everything, fills defaults. No I/O. */
export function resolveZooKeeperOptions(url: string | URL | undefined, options: Readonly<Record<string, unknown>> = {}): ResolvedZooKeeperOptions {
  for (const name of Object.keys(options)) {
    if (!objectOptions.has(name)) throw new InvalidArgumentError(`option "${name}"`, `unknown; the zookeeper options are ${[...objectOptions].join(', ')}`);
  }
  const fromUrl = url === undefined ? {} : parseZooKeeperUrl(typeof url === 'string' ? url : url.href);
  const merged: Record<string, unknown> = { ...fromUrl, ...options };
  const connectString = merged['connectString'];
  if (typeof connectString !== 'string' || connectString === '') throw new InvalidArgumentError('connectString', 'give a zookeeper:// URL or a connectString option');
  const basePath = merged['basePath'] ?? defaultBasePath;
  if (typeof basePath !== 'string') throw new InvalidArgumentError('basePath', 'expected a string');
  const chroot = merged['chroot'] ?? '/';
  if (typeof chroot !== 'string') throw new InvalidArgumentError('chroot', 'expected a string');
  return Object.freeze({
    connectString: validateConnectString(connectString),
    basePath: validateBasePath(`${validateBasePath(chroot, 'chroot')}${validateBasePath(basePath)}` || '/'),
    sessionTimeoutMs: positiveInteger('sessionTimeoutMs', merged['sessionTimeoutMs'] ?? defaults.sessionTimeoutMs),
    connectTimeoutMs: positiveInteger('connectTimeoutMs', merged['connectTimeoutMs'] ?? defaults.connectTimeoutMs),
    operationTimeoutMs: positiveInteger('operationTimeoutMs', merged['operationTimeoutMs'] ?? defaults.operationTimeoutMs),
    lostOn: lostOn(merged['lostOn'] ?? 'expired'),
    parentCleanupDelayMs: nonNegativeInteger('parentCleanupDelayMs', merged['parentCleanupDelayMs'] ?? defaults.parentCleanupDelayMs),
  });
}
