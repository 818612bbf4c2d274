import { InvalidArgumentError } from '@deadbolt/core/adapter';

/** 'advisory': session-level pg_advisory_lock on a dedicated connection. 'lease': a row with a server-clock expiry. */
export type PostgresMode = 'advisory' | 'lease';

export const postgresModes: readonly PostgresMode[] = Object.freeze(['advisory', 'lease']);

/** The object form, as given in `createLockClient({ backend: 'postgres', options: { ... } })` or beside a URL. */
export interface PostgresBackendOptions {
  /** Which algorithm. Default 'advisory' (issue 5). */
  readonly mode?: PostgresMode;
  /** A libpq-style `postgres://user:pass@host:port/db` (without Deadbolt's parameters). */
  readonly connectionString?: string;
  /** Most connections the pool opens. Default 8 (lease) or 10 (advisory: dedicated sessions, each holding many locks). */
  readonly pool?: number;
  /** Lease table (created if absent). Default 'deadbolt_locks'. Advisory fences live in 'deadbolt_fences' (or '<table>_fences'). */
  readonly table?: string;
  /** Deadline of one statement, enforced by the server (statement_timeout) and by the client. Default 2000. */
  readonly statementTimeoutMs?: number;
  /** Deadline of opening a connection. Default: statementTimeoutMs. */
  readonly connectTimeoutMs?: number;
  /** Mixed into the advisory-lock id so two applications sharing a database do not collide. Default ''. */
  readonly namespace?: string;
}

export interface ResolvedPostgresOptions {
  readonly mode: PostgresMode;
  readonly connectionString: string;
  readonly pool: number;
  readonly table: string;
  readonly fenceTable: string;
  readonly statementTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly namespace: string;
}

export const defaultStatementTimeoutMs = 2_000;
export const defaultLeaseTable = 'deadbolt_locks';
export const defaultFenceTable = 'deadbolt_fences';

/** Deadbolt's URL parameters; `prefix` belongs to core, which applies it before keys reach us. */
const urlParameters: ReadonlySet<string> = new Set(['mode', 'table', 'statementTimeoutMs', 'connectTimeoutMs', 'namespace', 'pool', 'prefix']);
/**
 * libpq parameters that pg's connection-string parser (pg-connection-string) understands: they stay
 * in the connection string handed to pg. Anything else is a typo and is refused before any I/O.
 */
const libpqParameters: ReadonlySet<string> = new Set(['sslmode', 'sslcert', 'sslkey', 'sslrootcert', 'application_name', 'options', 'host', 'port', 'user', 'password', 'dbname']);
const objectOptions: ReadonlySet<string> = new Set(['mode', 'connectionString', 'pool', 'table', 'statementTimeoutMs', 'connectTimeoutMs', 'namespace']);
const backend = 'postgres';

/** Splits `postgres://...?mode=lease&table=x` into Deadbolt options and a plain connection string. No I/O. */
export function parsePostgresUrl(input: string | URL): PostgresBackendOptions {
  let url: URL;
  try {
    url = new URL(typeof input === 'string' ? input : input.href);
  } catch {
    throw new InvalidArgumentError('url', 'not a postgres:// or postgresql:// URL', { backend });
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new InvalidArgumentError('url', `scheme "${url.protocol}" is not postgres: or postgresql:`, { backend });
  }
  const options: Record<string, unknown> = {};
  const plain = new URL(url.href);
  plain.search = '';
  for (const name of new Set(url.searchParams.keys())) {
    if (libpqParameters.has(name)) {
      for (const value of url.searchParams.getAll(name)) plain.searchParams.append(name, value);
      continue;
    }
    if (!urlParameters.has(name)) throw new InvalidArgumentError(`URL parameter "${name}"`, `unknown; postgres:// takes ${[...urlParameters].join(', ')}`, { backend });
    const value = url.searchParams.get(name) ?? '';
    if (name === 'statementTimeoutMs' || name === 'connectTimeoutMs' || name === 'pool') options[name] = parseNumber(name, value);
    else if (name !== 'prefix') options[name] = value;
  }
  options.connectionString = plain.href;
  return options as PostgresBackendOptions;
}

/** Merges URL options with object options (the object wins) and validates everything. No I/O. */
export function resolvePostgresOptions(url: string | URL | undefined, given: Readonly<Record<string, unknown>> = {}): ResolvedPostgresOptions {
  for (const name of Object.keys(given)) {
    if (!objectOptions.has(name)) throw new InvalidArgumentError(`option "${name}"`, `unknown; the postgres options are ${[...objectOptions].join(', ')}`, { backend });
  }
  const fromUrl = url === undefined ? {} : parsePostgresUrl(url);
  const merged = { ...fromUrl, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) } as Record<string, unknown>;

  const mode = merged.mode ?? 'advisory';
  if (typeof mode !== 'string' || !(postgresModes as readonly string[]).includes(mode)) {
    throw new InvalidArgumentError('mode', `"${String(mode)}" is not one of ${postgresModes.join(', ')}`, { backend });
  }
  const connectionString = merged.connectionString ?? 'postgres://localhost:5432/postgres';
  if (typeof connectionString !== 'string' || !/^postgres(ql)?:\/\//i.test(connectionString)) {
    throw new InvalidArgumentError('connectionString', 'expected a postgres:// URL', { backend });
  }
  const table = merged.table ?? defaultLeaseTable;
  if (typeof table !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(table)) {
    throw new InvalidArgumentError('table', 'expected a plain SQL identifier (letters, digits, _; at most 63)', { backend });
  }
  const namespace = merged.namespace ?? '';
  if (typeof namespace !== 'string') throw new InvalidArgumentError('namespace', 'expected a string', { backend });
  // Advisory mode multiplexes locks onto sessions; a blocking wait parks one session each.
  const pool = merged.pool ?? (mode === 'advisory' ? 10 : 8);
  if (typeof pool !== 'number' || !Number.isInteger(pool) || pool < 1 || pool > 1000) throw new InvalidArgumentError('pool', 'expected an integer in [1, 1000]', { backend });
  const statementTimeoutMs = positive('statementTimeoutMs', merged.statementTimeoutMs ?? defaultStatementTimeoutMs);
  const connectTimeoutMs = positive('connectTimeoutMs', merged.connectTimeoutMs ?? statementTimeoutMs);
  return Object.freeze({
    mode: mode as PostgresMode,
    connectionString,
    pool,
    table,
    // The fence table follows a custom lease table's name so two deployments stay apart.
    fenceTable: table === defaultLeaseTable ? defaultFenceTable : `${table}_fences`.slice(0, 63),
    statementTimeoutMs,
    connectTimeoutMs,
    namespace,
  });
}

function parseNumber(name: string, text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new InvalidArgumentError(name, `"${text}" is not a number`, { backend });
  return value;
}

function positive(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > 2 ** 31 - 1) {
    throw new InvalidArgumentError(name, `expected a positive integer number of milliseconds, got ${String(value)}`, { backend });
  }
  return value;
}
