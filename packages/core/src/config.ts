import type { LockBackend } from './contract/backend.js';
import { InvalidArgumentError } from './errors.js';
import { findBackendFactory, knownBackendPackages, registeredSchemes } from './registry.js';
import type { LockClientConfig, LockClientOptions } from './api/client.js';
import type { LockDefaults } from './api/lock.js';
import { takeLockDelayParameter } from './lock-delay.js';
import { parseBackendUrl, redactUrl } from './url.js';
import { maxDurationMs, unsafeText, validateAcquireOptions } from './validation.js';

/** The library defaults: finite waits, so nothing waits forever by accident. */
export const defaultLockDefaults: LockDefaults = Object.freeze({
  ttlMs: 30_000,
  waitMs: 10_000,
  autoRenew: true,
  lockDelayMs: 0,
});

export interface ResolvedConfig {
  /** For messages before the backend is loaded: the scheme. */
  readonly scheme: string;
  readonly prefix: string | undefined;
  readonly defaults: LockDefaults;
  /** The backend now when its factory is registered, or a promise that imports its package first. */
  readonly backend: LockBackend | Promise<LockBackend>;
}

const optionNames: ReadonlySet<string> = new Set(['url', 'backend', 'options', 'prefix', 'defaults']);

/** Turns any accepted configuration into a backend (or its loading promise). Throws before any I/O. */
export function resolveConfig(config: LockClientConfig | undefined): ResolvedConfig {
  const options = normalize(config);
  let defaults = resolveDefaults(options.defaults);
  if (options.prefix !== undefined && typeof options.prefix !== 'string') {
    throw new InvalidArgumentError('prefix', 'expected a string (use "" for no prefix)');
  }

  const badGivenPrefix = options.prefix === undefined ? undefined : unsafeText(options.prefix);
  if (badGivenPrefix !== undefined) throw new InvalidArgumentError('prefix', `the prefix ${badGivenPrefix}`);
  if (options.backend !== undefined && typeof options.backend === 'object') {
    return { scheme: options.backend.name, prefix: options.prefix, defaults, backend: options.backend };
  }
  const url = options.url === undefined ? undefined : parseBackendUrl(options.url);
  const scheme = (url ? url.protocol.replace(/:$/, '') : (options.backend ?? '')).toLowerCase();
  if (scheme === '') {
    throw new InvalidArgumentError('config', 'give a url (e.g. "redis://127.0.0.1:6379") or a backend name');
  }
  const prefix = options.prefix ?? (url?.searchParams.has('prefix') ? (url.searchParams.get('prefix') ?? '') : undefined);
  const badPrefix = prefix === undefined ? undefined : unsafeText(prefix);
  if (badPrefix !== undefined) throw new InvalidArgumentError('prefix', `the prefix ${badPrefix}`);
  const fromUrl = takeLockDelayParameter(url, options.url);
  // As with the prefix, the object form's own setting wins over the URL's.
  if (fromUrl.lockDelayMs !== undefined && options.defaults?.lockDelayMs === undefined) {
    defaults = Object.freeze({ ...defaults, lockDelayMs: fromUrl.lockDelayMs });
  }
  const backendConfig = { ...(url ? { url, urlText: fromUrl.urlText } : {}), options: options.options ?? {} };
  const factory = findBackendFactory(scheme);
  if (factory) return { scheme, prefix, defaults, backend: factory(backendConfig) };

  const packageName = knownBackendPackages[scheme];
  if (packageName === undefined) {
    const known = [...new Set([...registeredSchemes(), ...Object.keys(knownBackendPackages)])].sort().join(', ');
    const shown = url ? ` in ${redactUrl(url)}` : '';
    throw new InvalidArgumentError(
      'backend',
      `unknown scheme "${scheme}"${shown}; registered or installable schemes are: ${known}. A third-party adapter must call registerBackend() first`,
    );
  }
  // The adapter registers itself when its package is imported: load it on first use.
  const backend = import(packageName).then(
    () => {
      const loaded = findBackendFactory(scheme);
      if (!loaded) throw new InvalidArgumentError('backend', `${packageName} loaded but did not register the "${scheme}" scheme`);
      return loaded(backendConfig);
    },
    (error: unknown) => {
      throw new InvalidArgumentError('backend', `the "${scheme}" scheme needs the package ${packageName}: run npm install ${packageName}`, {
        cause: error,
      });
    },
  );
  // A client that is created and closed without use must not leave an unhandled rejection behind.
  backend.catch(() => undefined);
  return { scheme, prefix, defaults, backend };
}

function normalize(config: LockClientConfig | undefined): LockClientOptions {
  if (config === undefined) return { url: process.env.DEADBOLT_URL ?? 'memory://' };
  if (typeof config === 'string') return { url: config };
  if (config === null || typeof config !== 'object') {
    throw new InvalidArgumentError('config', 'expected a URL string or an options object');
  }
  for (const name of Object.keys(config)) {
    if (!optionNames.has(name)) {
      throw new InvalidArgumentError(`config option "${name}"`, `unknown option; the options are ${[...optionNames].join(', ')}`);
    }
  }
  if (config.url === undefined && config.backend === undefined) {
    return { ...config, url: process.env.DEADBOLT_URL ?? 'memory://' };
  }
  return config;
}

function resolveDefaults(given: Partial<LockDefaults> | undefined): LockDefaults {
  if (given === undefined) return defaultLockDefaults;
  const unknownName = Object.keys(given).find((name) => !(name in defaultLockDefaults) && name !== 'expiringThresholdMs');
  if (unknownName !== undefined) {
    throw new InvalidArgumentError(
      `defaults option "${unknownName}"`,
      'unknown option; the defaults are ttlMs, waitMs, autoRenew, lockDelayMs, expiringThresholdMs',
    );
  }
  validateAcquireOptions('defaults', given, 'config');
  const merged = { ...defaultLockDefaults, ...given };
  if (merged.ttlMs > maxDurationMs) throw new InvalidArgumentError('defaults.ttlMs', 'too large');
  return Object.freeze(merged);
}
