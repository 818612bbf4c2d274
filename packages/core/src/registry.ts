import type { BackendFactory } from './contract/backend.js';

/**
 * Backend factories by URL scheme: a plain Map. Dependency injection is the application's choice,
 * not the registry's (see `@deadbolt/core/tsyringe` for a container recipe).
 */
const factories = new Map<string, BackendFactory>();

/** Schemes Deadbolt knows a package for, so a missing install gets a precise message and a lazy import. */
export const knownBackendPackages: Readonly<Record<string, string>> = Object.freeze({
  redis: '@deadbolt/redis',
  rediss: '@deadbolt/redis',
  'redis+sentinel': '@deadbolt/redis',
  'rediss+sentinel': '@deadbolt/redis',
  memcached: '@deadbolt/memcached',
  postgres: '@deadbolt/postgres',
  postgresql: '@deadbolt/postgres',
  zookeeper: '@deadbolt/zookeeper',
  etcd: '@deadbolt/etcd',
  etcds: '@deadbolt/etcd',
});

function normalize(scheme: string): string {
  return scheme.toLowerCase().replace(/:$/, '');
}

/** Makes a backend usable by URL (`<scheme>://...`) and by name (`{ backend: scheme }`). A later registration replaces an earlier one. */
export function registerBackend(scheme: string, factory: BackendFactory): void {
  factories.set(normalize(scheme), factory);
}

export function findBackendFactory(scheme: string): BackendFactory | undefined {
  return factories.get(normalize(scheme));
}

/** Registered schemes, for error messages. */
export function registeredSchemes(): string[] {
  return [...factories.keys()].sort();
}
