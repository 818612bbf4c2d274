import type { ConnectionErrorClassifier } from '@deadbolt/core/adapter';

/** PostgreSQL SQLSTATEs of a refused configuration: authentication, unknown database or role. */
const configurationStates: ReadonlyMap<string, string> = new Map([
  ['28P01', 'authentication failed (wrong password)'],
  ['28000', 'authentication refused (role or pg_hba.conf)'],
  ['3D000', 'the database does not exist'],
]);

/**
 * PostgreSQL's reading of pg's errors for the kit's connection-error mapping: a refused
 * configuration (bad credentials, a database that does not exist) is a configuration error, not an
 * outage. Everything else is left to the kit's rules (socket codes such as ECONNREFUSED).
 */
export const classifyConnectionError: ConnectionErrorClassifier = (error) => {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  const refused = typeof code === 'string' ? configurationStates.get(code) : undefined;
  return refused === undefined ? undefined : { refused };
};
