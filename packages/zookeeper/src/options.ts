import {
  choiceOption,
  definedEntries,
  durationOption,
  integerOption,
  InvalidArgumentError,
  parseHostList,
  rejectUnknownNames,
  splitBackendUrl,
  stringOption,
  urlParameters,
} from '@deadbolt/core/adapter';
import { defaultJuteMaxBuffer } from './multi-size.js';

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
  /**
   * The servers' `jute.maxbuffer` in bytes (default 1048575, ZooKeeper's own): an acquireAll whose one
   * multi request would be longer is refused with InvalidArgumentError before any I/O.
   */
  readonly juteMaxBuffer?: number;
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
  /** The longest request the servers accept (their jute.maxbuffer). */
  readonly juteMaxBuffer: number;
}

export const defaultBasePath = '/deadbolt/locks';
// parentCleanupDelayMs: a key used in a loop keeps its parent instead of deleting and re-creating it every cycle.
const defaults = { sessionTimeoutMs: 10_000, connectTimeoutMs: 5_000, operationTimeoutMs: 5_000, parentCleanupDelayMs: 1_000 } as const;
const defaultPort = 2181;
const backend = 'zookeeper';

/** `prefix` belongs to core (it prefixes keys before they reach us), so it is accepted and ignored. */
const urlParameterNames: ReadonlySet<string> = new Set([
  'sessionTimeoutMs',
  'connectTimeoutMs',
  'operationTimeoutMs',
  'lostOn',
  'parentCleanupDelayMs',
  'juteMaxBuffer',
  'prefix',
]);
const objectOptions: ReadonlySet<string> = new Set([
  'connectString',
  'basePath',
  'sessionTimeoutMs',
  'connectTimeoutMs',
  'operationTimeoutMs',
  'lostOn',
  'parentCleanupDelayMs',
  'juteMaxBuffer',
  'prefix',
  'chroot',
]);

/** Validates a ZooKeeper path: absolute, no empty, '.' or '..' segment, no trailing slash. */
export function validateBasePath(path: string, name = 'basePath'): string {
  const problem = !path.startsWith('/')
    ? 'must start with "/"'
    : path.length > 1 && path.endsWith('/')
      ? 'must not end with "/"'
      : path
            .split('/')
            .slice(1)
            .some((segment) => segment === '' || segment === '.' || segment === '..') && path !== '/'
        ? 'has an empty, "." or ".." segment'
        : /[\p{Cc}\ud800-\uf8ff\ufff0-\uffff]/u.test(path)
          ? 'contains a character ZooKeeper does not allow in paths'
          : undefined;
  if (problem !== undefined) throw new InvalidArgumentError(name, `"${path}" ${problem}`, { backend });
  return path === '/' ? '' : path;
}

/** `host[:port],...` with every port filled in (ZooKeeper's connect string, without chroot). */
function validateConnectString(text: string): string {
  return parseHostList(text, defaultPort, 'connectString', backend)
    .map(({ host, port }) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`))
    .join(',');
}

/**
 * Parses `zookeeper://host1:2181,host2:2181/base/path?sessionTimeoutMs=..`. The WHATWG URL parser
 * keeps only the first host of a list, so this reads the text as written (BackendConfig.urlText).
 */
export function parseZooKeeperUrl(text: string): Record<string, unknown> {
  const url = splitBackendUrl(text, backend, ['zookeeper']);
  if (url.username !== undefined || url.password !== undefined)
    throw new InvalidArgumentError('url', 'credentials in a zookeeper:// URL are not supported', { backend });
  if (url.hosts === '') throw new InvalidArgumentError('url', 'no host in the zookeeper:// URL', { backend });
  const result: Record<string, unknown> = { connectString: url.hosts, ...urlParameters(url.params, urlParameterNames, backend) };
  if (url.path !== '' && url.path !== '/') {
    try {
      result['basePath'] = decodeURIComponent(url.path);
    } catch {
      throw new InvalidArgumentError('basePath', 'malformed percent-encoding in the zookeeper:// path', { backend });
    }
  }
  return result;
}

/** Merges the URL and the object form (the object wins), validates everything, fills defaults. No I/O. */
export function resolveZooKeeperOptions(
  url: string | URL | undefined,
  options: Readonly<Record<string, unknown>> = {},
): ResolvedZooKeeperOptions {
  rejectUnknownNames('option', Object.keys(options), objectOptions, backend);
  const fromUrl = url === undefined ? {} : parseZooKeeperUrl(typeof url === 'string' ? url : url.href);
  const merged: Record<string, unknown> = { ...fromUrl, ...definedEntries(options) };
  const connectString = merged['connectString'];
  if (typeof connectString !== 'string' || connectString === '')
    throw new InvalidArgumentError('connectString', 'give a zookeeper:// URL or a connectString option', { backend });
  const basePath = stringOption('basePath', merged['basePath'] ?? defaultBasePath, backend);
  const chroot = stringOption('chroot', merged['chroot'] ?? '/', backend);
  return Object.freeze({
    connectString: validateConnectString(connectString),
    basePath: validateBasePath(`${validateBasePath(chroot, 'chroot')}${validateBasePath(basePath)}` || '/'),
    sessionTimeoutMs: durationOption('sessionTimeoutMs', merged['sessionTimeoutMs'] ?? defaults.sessionTimeoutMs, backend),
    connectTimeoutMs: durationOption('connectTimeoutMs', merged['connectTimeoutMs'] ?? defaults.connectTimeoutMs, backend),
    operationTimeoutMs: durationOption('operationTimeoutMs', merged['operationTimeoutMs'] ?? defaults.operationTimeoutMs, backend),
    lostOn: choiceOption<ZooKeeperLostOn>('lostOn', merged['lostOn'] ?? 'expired', ['expired', 'suspended'], backend),
    parentCleanupDelayMs: durationOption(
      'parentCleanupDelayMs',
      merged['parentCleanupDelayMs'] ?? defaults.parentCleanupDelayMs,
      backend,
      0,
    ),
    juteMaxBuffer: integerOption('juteMaxBuffer', merged['juteMaxBuffer'] ?? defaultJuteMaxBuffer, backend, 1024, 2 ** 31 - 1),
  });
}
