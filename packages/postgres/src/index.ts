import { registerBackend, type BackendFactory, type LockBackend } from '@deadbolt/core/adapter';
import { createPostgresBackendFromOptions } from './backend.js';
import { resolvePostgresOptions } from './options.js';
import type { PostgresBackendOptions } from './settings.js';

/**
 * `postgres://` and `postgresql://` for createLockClient. Validates every URL parameter and option
 * before any I/O; connections open on first use.
 */
export const postgresBackendFactory: BackendFactory = ({ url, urlText, options }) =>
  createPostgresBackendFromOptions(resolvePostgresOptions(urlText ?? url, options));

/** A backend without going through createLockClient. */
export function createPostgresBackend(config: string | PostgresBackendOptions): LockBackend {
  return createPostgresBackendFromOptions(
    typeof config === 'string'
      ? resolvePostgresOptions(config)
      : resolvePostgresOptions(undefined, config as Readonly<Record<string, unknown>>),
  );
}

registerBackend('postgres', postgresBackendFactory);
registerBackend('postgresql', postgresBackendFactory);

export { PostgresBackend } from './backend.js';
export { advisoryCapabilities } from './modes/advisory/mode.js';
export { leaseCapabilities } from './modes/lease/mode.js';
export { postgresModeTable, type PostgresModeEntry } from './modes/table.js';
export { advisoryLockId, advisoryLockParts } from './key-hash.js';
export { leaseSql, releaseChannel } from './modes/lease/sql.js';
export { counterBits as fenceCounterBits } from './fence.js';
export { parsePostgresUrl, resolvePostgresOptions, postgresModes } from './options.js';
export { defaultStatementTimeoutMs, defaultLeaseTable, defaultFenceTable } from './settings.js';
export type { PostgresBackendOptions, PostgresMode, ResolvedPostgresOptions } from './settings.js';

/** Types `options` by scheme in createLockClient (`{ url: 'postgres://...', options }`). */
declare module '@deadbolt/core' {
  interface BackendOptionsByScheme {
    postgres: PostgresBackendOptions;
    postgresql: PostgresBackendOptions;
  }
}
