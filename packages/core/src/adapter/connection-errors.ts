import { BackendConfigurationError, BackendUnavailableError, DeadboltError } from '../errors.js';

/**
 * Makes a driver's connection failure actionable: it names the backend and where it tried
 * (`host:port`), keeps the system error's code (ECONNREFUSED, ENOTFOUND, ...), and tells a refused
 * configuration (bad credentials, a database that does not exist) from an outage. Drivers' own
 * messages carry neither the password nor the URL, and nothing here adds them.
 */
export interface ConnectionContext {
  readonly action: string;
  readonly key?: string | undefined;
  readonly backend: string;
  /** Where the backend connects, for messages: `host:port[,host:port]`, never a URL. */
  readonly endpoint?: string | undefined;
}

/** Socket-level failures: the server could not be reached at all. */
const systemCodes: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ECONNABORTED',
]);

/**
 * What an adapter's classifier says of a driver error:
 * - `{ refused: why }`: the server refused the configuration (bad credentials, a database or role
 *   that does not exist), `why` in a user's words; the error becomes BackendConfigurationError;
 * - 'refused': the same, the driver's own message saying why;
 * - 'unreachable': the server could not be reached at all (BackendUnavailableError naming where).
 * undefined: not a connection failure the adapter knows; the built-in rules decide.
 */
export type ConnectionErrorClass = { readonly refused: string } | 'refused' | 'unreachable';

/** An adapter's reading of its driver's errors: the SQLSTATEs, reply prefixes or codes only it knows. */
export type ConnectionErrorClassifier = (error: unknown) => ConnectionErrorClass | undefined;

/** PostgreSQL SQLSTATEs of a refused configuration: authentication, unknown database or role. */
const postgresConfigurationStates: ReadonlyMap<string, string> = new Map([
  ['28P01', 'authentication failed (wrong password)'],
  ['28000', 'authentication refused (role or pg_hba.conf)'],
  ['3D000', 'the database does not exist'],
]);

/** Redis replies of a refused configuration. */
const redisConfigurationReply = /^(WRONGPASS|NOAUTH|NOPERM)\b|invalid password|ERR AUTH/i;

/**
 * The dialect rules core still applies after an adapter's own classifier: PostgreSQL's SQLSTATEs
 * and Redis's refused replies. Moves into the redis/postgres adapters' classifiers; deleted once
 * both pass theirs.
 */
export const builtInDialectClassifier: ConnectionErrorClassifier = (error) => {
  const code = codeOf(error);
  const refused = code === undefined ? undefined : postgresConfigurationStates.get(code);
  if (refused !== undefined) return { refused };
  return redisConfigurationReply.test(messageOf(error)) ? 'refused' : undefined;
};

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The typed error for `error` when it is a connection-level failure, else undefined (the caller
 * keeps its own mapping). A DeadboltError is never rewritten. `classify` is the adapter's reading
 * of its driver's errors; what it leaves undefined, the built-in rules decide (system codes such as
 * ECONNREFUSED, and builtInDialectClassifier while it lasts).
 */
export function explainConnectionError(
  error: unknown,
  context: ConnectionContext,
  classify?: ConnectionErrorClassifier,
): DeadboltError | undefined {
  if (error instanceof DeadboltError || error === null || error === undefined) return undefined;
  const where = context.endpoint === undefined ? '' : ` at ${context.endpoint}`;
  const code = codeOf(error);
  const message = messageOf(error);
  const verdict =
    classify?.(error) ?? builtInDialectClassifier(error) ?? (code !== undefined && systemCodes.has(code) ? 'unreachable' : undefined);
  if (verdict === undefined) return undefined;
  if (verdict !== 'unreachable') {
    const why = verdict === 'refused' ? undefined : verdict.refused;
    const problem = `${context.backend}${where}: ${why ?? message}${why !== undefined && message !== '' ? ` (${message})` : ''}`;
    return new BackendConfigurationError(problem, { key: context.key, backend: context.backend, cause: error });
  }
  // Node's AggregateError (IPv6 then IPv4) has an empty message: the code says it all.
  const detail = code === undefined ? message : message === '' ? code : message.includes(code) ? message : `${code}: ${message}`;
  const cause = new Error(`cannot reach ${context.backend}${where}: ${detail}`, { cause: error });
  if (code !== undefined) (cause as { code?: string }).code = code;
  return new BackendUnavailableError(context.action, { key: context.key, backend: context.backend, cause });
}

/** `host:port` list for messages. */
export function endpointOf(addresses: readonly { readonly host: string; readonly port: number }[]): string {
  return addresses.map(({ host, port }) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`)).join(',');
}
