import { registerBackend, type BackendFactory } from '@deadbolt/core/adapter';
import { EtcdBackend } from './backend.js';
import { resolveEtcdOptions, type EtcdBackendOptions } from './options.js';

/**
 * `etcd://[user:password@]h1:2379,h2:2379[/namespace][?callTimeoutMs=..]` (`etcds://` for TLS) for
 * createLockClient. Everything is validated before any I/O; the lease is granted on first use.
 */
export const etcdBackendFactory: BackendFactory = ({ url, urlText, options }) =>
  new EtcdBackend(resolveEtcdOptions(urlText ?? url, options));

/** A backend without going through createLockClient: `createLockClient({ backend: createEtcdBackend(...) })`. */
export function createEtcdBackend(config: string | EtcdBackendOptions): EtcdBackend {
  return new EtcdBackend(
    typeof config === 'string' ? resolveEtcdOptions(config) : resolveEtcdOptions(undefined, config as Readonly<Record<string, unknown>>),
  );
}

registerBackend('etcd', etcdBackendFactory);
registerBackend('etcds', etcdBackendFactory);

export { EtcdBackend, etcdCapabilities, type EtcdGrant } from './backend.js';
export { contenderKey, contendersPrefix, leaseHex } from './keys.js';
export { parseEtcdUrl, resolveEtcdOptions } from './options.js';
export type { EtcdBackendOptions, ResolvedEtcdOptions } from './options.js';

/** Types `options` by scheme in createLockClient (`{ url: 'etcd://...', options }`). */
declare module '@deadbolt/core' {
  interface BackendOptionsByScheme {
    etcd: EtcdBackendOptions;
    etcds: EtcdBackendOptions;
  }
}
