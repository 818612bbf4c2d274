import { registerBackend, type BackendFactory } from '@deadbolt/core/adapter';
import { RedisBackend } from './backend.js';
import { resolveRedisOptions, type RedisBackendOptions } from './options.js';

/**
 * `redis://` and `rediss://` for createLockClient. Validates everything (unknown URL parameters and
 * options included) before any I/O; connections open on first use.
 */
export const redisBackendFactory: BackendFactory = ({ url, urlText, options }) =>
  new RedisBackend(resolveRedisOptions(urlText ?? url, options));

/** A backend without going through createLockClient: `createLockClient({ backend: createRedisBackend(...) })`. */
export function createRedisBackend(config: string | RedisBackendOptions): RedisBackend {
  return typeof config === 'string'
    ? new RedisBackend(resolveRedisOptions(config))
    : new RedisBackend(resolveRedisOptions(undefined, config as Readonly<Record<string, unknown>>));
}

registerBackend('redis', redisBackendFactory);
registerBackend('rediss', redisBackendFactory);
registerBackend('redis+sentinel', redisBackendFactory);
registerBackend('rediss+sentinel', redisBackendFactory);

export { RedisBackend } from './backend.js';
export {
  parseRedisUrl,
  resolveRedisOptions,
  redisModes,
  defaultCommandTimeoutMs,
  defaultDriftFactor,
  defaultWaiterLeaseMs,
  defaultReplicaTimeoutMs,
} from './options.js';
export type { RedisBackendOptions, RedisMode, RedisNodeAddress, ResolvedRedisOptions } from './options.js';
export { setnxCapabilities } from './modes/setnx.js';
export { getsetCapabilities } from './modes/getset.js';
export { hashReentrantCapabilities } from './modes/hash-reentrant.js';
export { redlockCapabilities, QuorumUnreachableError } from './modes/redlock.js';
export { fenceKey, releaseChannel, slotOf } from './keys.js';
export { fairCapabilities } from './modes/fair.js';
export { ReplicaAcknowledgementError, type ReplicaWait } from './replica-ack.js';

/** Types `options` by scheme in createLockClient (`{ url: 'redis://...', options }`). */
declare module '@deadbolt/core' {
  interface BackendOptionsByScheme {
    redis: RedisBackendOptions;
    rediss: RedisBackendOptions;
  }
}
