import { registerBackend, type BackendFactory } from '@deadbolt/core/adapter';
import { ZooKeeperBackend } from './backend.js';
import { resolveZooKeeperOptions, type ZooKeeperBackendOptions } from './options.js';
import type { RecipeHooks } from './recipe.js';

/**
 * `zookeeper://host1:2181,host2:2181/base/path?sessionTimeoutMs=..` for createLockClient. Everything
 * is validated before any I/O; the session opens on first use.
 */
export const zooKeeperBackendFactory: BackendFactory = ({ url, urlText, options }) =>
  new ZooKeeperBackend(resolveZooKeeperOptions(urlText ?? url, options));

/** A backend without going through createLockClient: `createLockClient({ backend: createZooKeeperBackend(...) })`. */
export function createZooKeeperBackend(config: string | ZooKeeperBackendOptions, hooks?: RecipeHooks): ZooKeeperBackend {
  const resolved =
    typeof config === 'string'
      ? resolveZooKeeperOptions(config)
      : resolveZooKeeperOptions(undefined, config as Readonly<Record<string, unknown>>);
  return new ZooKeeperBackend(resolved, hooks);
}

registerBackend('zookeeper', zooKeeperBackendFactory);

export { ZooKeeperBackend, zooKeeperCapabilities, type ZooKeeperGrant } from './backend.js';
export { defaultBasePath, parseZooKeeperUrl, resolveZooKeeperOptions } from './options.js';
export type { ResolvedZooKeeperOptions, ZooKeeperBackendOptions, ZooKeeperLostOn } from './options.js';
export { contenders, encodeKey, latchName, lockName, lockPath, sortKey } from './naming.js';
export type { ElectionLayout } from './election.js';
export type { RecipeHooks } from './recipe.js';
export { readMarker, readWriteContenders, readWriteSortKey, writeMarker } from './rw-recipe.js';
export { leaseName, leasesChild, locksChild } from './semaphore-recipe.js';

/** Types `options` by scheme in createLockClient (`{ url: 'zookeeper://...', options }`). */
declare module '@deadbolt/core' {
  interface BackendOptionsByScheme {
    zookeeper: ZooKeeperBackendOptions;
  }
}
