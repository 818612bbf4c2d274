import type { Capabilities } from '@deadbolt/core/adapter';
import { AdvisoryMode, advisoryCapabilities } from './advisory/mode.js';
import { LeaseMode, leaseCapabilities } from './lease/mode.js';
import type { PostgresMode } from '../settings.js';
import type { ModeConstructor } from './mode.js';

/** One row of the mode table: everything options parsing, the factory and the README know of a mode. */
export interface PostgresModeEntry {
  readonly capabilities: Capabilities;
  /** How it locks, in one line (the package README's mode table repeats it; a test compares them). */
  readonly summary: string;
  /** Options only this mode reads (every mode reads connectionString, pool, schema, table and the timeouts). */
  readonly ownOptions: readonly string[];
  /** Connections opened at most when `pool` is not given. */
  readonly defaultPool: number;
  /** Why the mode refuses the application's own pg.Pool, or undefined when it runs on one. */
  readonly refusesAppPool: string | undefined;
  readonly create: ModeConstructor;
}

/**
 * The PostgreSQL modes. Adding a mode is one entry here (and its file under modes/): the URL's
 * `?mode=`, the option checks, the backend's name, capabilities and construction all read this.
 */
export const postgresModeTable = Object.freeze({
  advisory: {
    capabilities: advisoryCapabilities,
    summary: 'session-level pg_advisory_lock, many locks on a few dedicated sessions; waiters in the server FIFO lock queue',
    ownOptions: ['namespace'],
    // Dedicated sessions, each holding many locks; a blocking wait parks one session each.
    defaultPool: 10,
    refusesAppPool:
      'advisory mode holds dedicated sessions for as long as locks live: give it a connectionString and a pool size, or use mode lease with your pg.Pool',
    create: (context) => new AdvisoryMode(context),
  },
  lease: {
    capabilities: leaseCapabilities,
    summary:
      'a row per lock with a server-clock expiry; a FIFO queue on the server, the lock granted in place to its head, one NOTIFY to its client',
    ownOptions: ['waiterLeaseMs'],
    defaultPool: 8,
    refusesAppPool: undefined,
    create: (context) => new LeaseMode(context),
  },
} as const satisfies Record<PostgresMode, PostgresModeEntry>);

/** The default when no `mode` is given. */
export const defaultPostgresMode: PostgresMode = 'advisory';

export const postgresModes: readonly PostgresMode[] = Object.freeze(Object.keys(postgresModeTable) as PostgresMode[]);

export function modeEntry(mode: PostgresMode): PostgresModeEntry {
  return postgresModeTable[mode];
}
