import type pg from 'pg';

/**
 * The package's ground floor: the option types and defaults every other file reads. It imports
 * nothing of the package, so the option parser (options.ts) can sit above the modes it validates.
 */

/** 'advisory': session-level pg_advisory_lock on dedicated sessions. 'lease': a row with a server-clock expiry. */
export type PostgresMode = 'advisory' | 'lease';

/** The object form, as given in `createLockClient({ backend: 'postgres', options: { ... } })` or beside a URL. */
export interface PostgresBackendOptions {
  /** Which algorithm. Default 'advisory'. */
  readonly mode?: PostgresMode;
  /** A libpq-style `postgres://user:pass@host:port/db` (without Deadbolt's parameters). */
  readonly connectionString?: string;
  /**
   * Most connections the pool opens. Default 8 (lease) or 10 (advisory: dedicated sessions, each
   * holding many locks). Lease mode also takes the application's own `pg.Pool` (Deadbolt never ends
   * it; the LISTEN connection is opened with the pool's settings).
   */
  readonly pool?: number | pg.Pool;
  /** The schema of Deadbolt's tables (created if absent). Default: the connection's search_path. */
  readonly schema?: string;
  /** Lease table (created if absent). Default 'deadbolt_locks'. Advisory fences live in 'deadbolt_fences' (or '<table>_fences'). */
  readonly table?: string;
  /** Deadline of one statement, enforced by the server (statement_timeout) and by the client. Default 2000. */
  readonly statementTimeoutMs?: number;
  /** Deadline of opening a connection. Default: statementTimeoutMs. */
  readonly connectTimeoutMs?: number;
  /** Mixed into the advisory-lock id so two applications sharing a database do not collide. Default ''. */
  readonly namespace?: string;
  /**
   * Lease mode: how long a queued waiter keeps its place without a heartbeat (server clock); it
   * heartbeats every third of it. A waiter that died delays the queue by at most this. Default 3000.
   */
  readonly waiterLeaseMs?: number;
}

export interface ResolvedPostgresOptions {
  /** `host:port` of the connection string, for error messages (never the URL: it holds the password). */
  readonly endpoint: string;
  readonly mode: PostgresMode;
  readonly connectionString: string;
  readonly pool: number;
  /** The application's own pool (lease mode), or undefined: Deadbolt opens and ends its own. */
  readonly ownPool: pg.Pool | undefined;
  readonly schema: string | undefined;
  readonly table: string;
  readonly fenceTable: string;
  readonly statementTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly namespace: string;
  readonly waiterLeaseMs: number;
}

export const defaultStatementTimeoutMs = 2_000;
export const defaultLeaseTable = 'deadbolt_locks';
export const defaultFenceTable = 'deadbolt_fences';
/** Three heartbeats of one second: a dead waiter costs the queue at most 3 s, once (as Redis fair mode). */
export const defaultWaiterLeaseMs = 3_000;
