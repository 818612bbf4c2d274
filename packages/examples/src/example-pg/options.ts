import {
  definedEntries,
  durationOption,
  integerOption,
  InvalidArgumentError,
  parseHostPort,
  rejectUnknownNames,
  splitBackendUrl,
  stringOption,
  urlParameters,
} from '@deadbolt/core/adapter';

/** The name the backend goes by in errors, logs and the URL scheme. */
export const backendName = 'example-pg';

/** The object form's options; the URL's parameters have the same names. */
export interface ExamplePgOptions {
  /** The lock table (created on first use, with a `<table>_fence` sequence beside it). Default `deadbolt_example_locks`. */
  readonly table?: string;
  /** Deadline of one statement, connect included. Default 2000 ms. */
  readonly timeoutMs?: number;
  /** How many connections statements are spread over. Default 4. */
  readonly connections?: number;
}

/** Everything checked, before any I/O. The password is kept for pg only: never put it in a message. */
export interface ResolvedExamplePgOptions {
  readonly host: string;
  readonly port: number;
  readonly user: string | undefined;
  readonly password: string | undefined;
  readonly database: string | undefined;
  readonly table: string;
  readonly timeoutMs: number;
  readonly connections: number;
}

const names: ReadonlySet<string> = new Set(['table', 'timeoutMs', 'connections']);
/** `prefix` belongs to core (it hands us full keys); the URL may carry it, the object form may not. */
const urlNames: ReadonlySet<string> = new Set([...names, 'prefix']);

/**
 * A plain, lower-case identifier that leaves room for the `_fence` suffix within PostgreSQL's 63
 * bytes. The table name is written into the SQL text (identifiers cannot be parameters), so it is
 * checked here, before anything reaches the server.
 */
const tableName = /^[a-z_][a-z0-9_]{0,56}$/;

/** `example-pg://user:password@host:port/database?table=...&timeoutMs=...&connections=...`, merged with `given` (which wins). */
export function resolveExamplePgOptions(
  url: string | URL | undefined,
  given: Readonly<Record<string, unknown>> = {},
): ResolvedExamplePgOptions {
  rejectUnknownNames('option', Object.keys(given), names, backendName);
  const parts = url === undefined ? undefined : splitBackendUrl(url, backendName, [backendName]);
  const fromUrl = parts === undefined ? {} : urlParameters(parts.params, urlNames, backendName);
  const merged: Record<string, unknown> = { ...fromUrl, ...definedEntries(given) };
  const address = parseHostPort(parts?.hosts || '127.0.0.1', 5432, 'url', backendName);
  const database = parts === undefined || parts.path.length <= 1 ? undefined : decodeURIComponent(parts.path.slice(1));
  const table = stringOption('table', merged.table ?? 'deadbolt_example_locks', backendName);
  if (!tableName.test(table)) {
    throw new InvalidArgumentError('table', `"${table}" is not a lower-case identifier of at most 57 characters (a-z, 0-9, _)`, {
      backend: backendName,
    });
  }
  return Object.freeze({
    ...address,
    user: parts?.username,
    password: parts?.password,
    database,
    table,
    timeoutMs: durationOption('timeoutMs', merged.timeoutMs ?? 2_000, backendName),
    connections: integerOption('connections', merged.connections ?? 4, backendName, 1, 64),
  });
}
