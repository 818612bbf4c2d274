import {
  choiceOption,
  endpointOf,
  definedEntries,
  durationOption,
  integerOption,
  InvalidArgumentError,
  rejectAmbiguousUrl,
  rejectUnknownNames,
  splitBackendUrl,
  stringOption,
  urlParameters,
} from '@deadbolt/core/adapter';
import type pg from 'pg';
import { defaultPostgresMode, modeEntry, postgresModes } from './modes/table.js';
import {
  defaultFenceTable,
  defaultLeaseTable,
  defaultStatementTimeoutMs,
  defaultWaiterLeaseMs,
  type PostgresBackendOptions,
  type ResolvedPostgresOptions,
} from './settings.js';

export { postgresModes };

/** Deadbolt's URL parameters; `prefix` belongs to core, which applies it before keys reach us. */
const urlParameterNames: ReadonlySet<string> = new Set([
  'mode',
  'table',
  'schema',
  'statementTimeoutMs',
  'connectTimeoutMs',
  'namespace',
  'pool',
  'waiterLeaseMs',
  'prefix',
]);
/**
 * libpq parameters that pg's connection-string parser (pg-connection-string) understands: they stay
 * in the connection string handed to pg. Anything else is a typo and is refused before any I/O.
 */
const libpqParameters: ReadonlySet<string> = new Set([
  'sslmode',
  'sslcert',
  'sslkey',
  'sslrootcert',
  'application_name',
  'options',
  'host',
  'port',
  'user',
  'password',
  'dbname',
]);
const objectOptions: ReadonlySet<string> = new Set([
  'mode',
  'connectionString',
  'pool',
  'schema',
  'table',
  'statementTimeoutMs',
  'connectTimeoutMs',
  'namespace',
  'waiterLeaseMs',
]);
const backend = 'postgres';
/** Options one mode reads and the others would silently ignore (the mode table's `ownOptions`). */
const modeSpecificOptions: ReadonlySet<string> = new Set(postgresModes.flatMap((mode) => modeEntry(mode).ownOptions));
const modesReading = (name: string): string => postgresModes.filter((mode) => modeEntry(mode).ownOptions.includes(name)).join(' or ');

/** Splits `postgres://...?mode=lease&table=x` into Deadbolt options and a plain connection string. No I/O. */
export function parsePostgresUrl(input: string | URL): PostgresBackendOptions {
  const parts = splitBackendUrl(input, backend, ['postgres', 'postgresql']);
  let url: URL;
  try {
    url = new URL(typeof input === 'string' ? input : input.href);
  } catch {
    throw new InvalidArgumentError('url', 'not a postgres:// or postgresql:// URL (one host; percent-encode the password)', { backend });
  }
  const plain = new URL(url.href);
  plain.search = '';
  const own = new URLSearchParams();
  for (const [name, value] of parts.params) {
    if (libpqParameters.has(name)) plain.searchParams.append(name, value);
    else own.append(name, value);
  }
  const options: Record<string, unknown> = urlParameters(own, urlParameterNames, backend);
  options.connectionString = plain.href;
  return options as PostgresBackendOptions;
}

/** Merges URL options with object options (the object wins) and validates everything. No I/O. */
export function resolvePostgresOptions(
  url: string | URL | undefined,
  given: Readonly<Record<string, unknown>> = {},
): ResolvedPostgresOptions {
  rejectUnknownNames('option', Object.keys(given), objectOptions, backend);
  const fromUrl = url === undefined ? {} : parsePostgresUrl(url);
  const merged = { ...fromUrl, ...definedEntries(given) } as Record<string, unknown>;

  const mode = choiceOption('mode', merged.mode ?? defaultPostgresMode, postgresModes, backend);
  const entry = modeEntry(mode);
  for (const name of Object.keys(merged)) {
    if (modeSpecificOptions.has(name) && !entry.ownOptions.includes(name))
      throw new InvalidArgumentError(name, `only the ${modesReading(name)} mode reads it, not ${mode}`, { backend });
  }
  const connectionString = merged.connectionString ?? 'postgres://localhost:5432/postgres';
  if (typeof connectionString !== 'string' || !/^postgres(ql)?:\/\//i.test(connectionString)) {
    throw new InvalidArgumentError('connectionString', 'expected a postgres:// URL', { backend });
  }
  // The same ambiguity rule as a URL: a password must not be readable as a host.
  rejectAmbiguousUrl(connectionString, backend);
  const table = merged.table ?? defaultLeaseTable;
  if (typeof table !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(table)) {
    throw new InvalidArgumentError('table', 'expected a plain SQL identifier (letters, digits, _; at most 63)', { backend });
  }
  const schema = merged.schema;
  if (schema !== undefined && (typeof schema !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema))) {
    throw new InvalidArgumentError('schema', 'expected a plain SQL identifier (letters, digits, _; at most 63)', { backend });
  }
  const namespace = stringOption('namespace', merged.namespace ?? '', backend);
  const ownPool = isPool(merged.pool) ? merged.pool : undefined;
  if (ownPool !== undefined && entry.refusesAppPool !== undefined) {
    throw new InvalidArgumentError('pool', entry.refusesAppPool, { backend });
  }
  const pool = ownPool !== undefined ? (ownPool.options.max ?? 10) : (merged.pool ?? entry.defaultPool);
  const statementTimeoutMs = durationOption('statementTimeoutMs', merged.statementTimeoutMs ?? defaultStatementTimeoutMs, backend);
  const connectTimeoutMs = durationOption('connectTimeoutMs', merged.connectTimeoutMs ?? statementTimeoutMs, backend);
  return Object.freeze({
    mode,
    endpoint:
      ownPool === undefined
        ? endpointOfConnectionString(connectionString)
        : typeof ownPool.options.connectionString === 'string'
          ? endpointOfConnectionString(ownPool.options.connectionString)
          : endpointOf([{ host: ownPool.options.host ?? 'localhost', port: ownPool.options.port ?? 5432 }]),
    connectionString,
    pool: integerOption('pool', pool, backend, 1, 1000),
    ownPool,
    schema,
    table,
    // The fence table follows a custom lease table's name so two deployments stay apart.
    fenceTable: table === defaultLeaseTable ? defaultFenceTable : `${table}_fences`.slice(0, 63),
    statementTimeoutMs,
    connectTimeoutMs,
    namespace,
    waiterLeaseMs: durationOption('waiterLeaseMs', merged.waiterLeaseMs ?? defaultWaiterLeaseMs, backend),
  });
}

/** A pg.Pool (duck-typed: the app's pg may be another copy than ours, so no instanceof). */
function isPool(value: unknown): value is pg.Pool {
  const candidate = value as { connect?: unknown; query?: unknown; end?: unknown; options?: unknown } | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.connect === 'function' &&
    typeof candidate.query === 'function' &&
    typeof candidate.end === 'function' &&
    typeof candidate.options === 'object'
  );
}

/** `host:port` of a postgres:// URL (libpq defaults: localhost, 5432; a `host=` parameter wins). */
function endpointOfConnectionString(text: string): string {
  try {
    const url = new URL(text);
    const host = url.searchParams.get('host') ?? (decodeURIComponent(url.hostname.replace(/^\[|\]$/g, '')) || 'localhost');
    return endpointOf([{ host, port: Number(url.searchParams.get('port') ?? (url.port || 5432)) }]);
  } catch {
    return 'the configured server';
  }
}
