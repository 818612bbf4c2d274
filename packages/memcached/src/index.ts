import { registerBackend, type BackendFactory } from '@deadbolt/core/adapter';
import { MemcachedBackend } from './backend.js';
import { resolveMemcachedOptions, type MemcachedBackendOptions } from './options.js';

/** `memcached://` for createLockClient. Validates everything before any I/O; connects on first use. */
export const memcachedBackendFactory: BackendFactory = ({ url, urlText, options }) =>
  new MemcachedBackend(resolveMemcachedOptions(urlText ?? url, options));

/** A backend without going through createLockClient. */
export function createMemcachedBackend(config: string | MemcachedBackendOptions): MemcachedBackend {
  return typeof config === 'string'
    ? new MemcachedBackend(resolveMemcachedOptions(config))
    : new MemcachedBackend(resolveMemcachedOptions(undefined, config as Readonly<Record<string, unknown>>));
}

registerBackend('memcached', memcachedBackendFactory);

export { MemcachedBackend, memcachedCapabilities } from './backend.js';
export { parseMemcachedUrl, resolveMemcachedOptions, defaultTimeoutMs } from './options.js';
export type { MemcachedBackendOptions, MemcachedServerAddress, ResolvedMemcachedOptions } from './options.js';
export { encodeKey, memcachedKeyLimit } from './keys.js';
export { expirySeconds } from './expiry.js';
export { add, deleteIfCas, getWithCas, setIfCas, Opcode, Status } from './protocol.js';
export type { Cas, RawResponse } from './protocol.js';

/** Types `options` by scheme in createLockClient (`{ url: 'memcached://...', options }`). */
declare module '@deadbolt/core' {
  interface BackendOptionsByScheme {
    memcached: MemcachedBackendOptions;
  }
}
