import type { ConnectionErrorClassifier } from '@deadbolt/core/adapter';

/** SQLSTATEs of a configuration the server refused: the user must fix the URL, not wait for an outage to end. */
const refusals: ReadonlyMap<string, string> = new Map([
  ['28P01', 'authentication failed (wrong password)'],
  ['28000', 'authentication refused (role or pg_hba.conf)'],
  ['3D000', 'the database does not exist'],
]);

/**
 * The kit's connection-error classify hook, read with PostgreSQL's words: a refused configuration
 * becomes BackendConfigurationError; anything else is left to the kit (socket codes: unreachable).
 */
export const classifyPgError: ConnectionErrorClassifier = (error) => {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  const refused = typeof code === 'string' ? refusals.get(code) : undefined;
  return refused === undefined ? undefined : { refused };
};
