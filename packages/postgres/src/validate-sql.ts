import type { Grant } from '@deadbolt/core/adapter';
import type { Session } from './sessions.js';

/**
 * `validate` for 'postgres:lease', in one statement for any number of grants: a grant holds while
 * its row carries its token and its lease end is not past on the server's clock (the same test as
 * renew's). A lock or a term is a row of the lock table (owner = token); a read, write or permit
 * hold a row of the holders table (kinds-sql.ts). Table names are built as leaseSql and kindsSql
 * build them.
 */
export function leaseValidateSql(table: string, schema?: string): string {
  const qualifier = schema === undefined ? '' : `"${schema}".`;
  const L = `${qualifier}"${table}"`;
  const H = `${qualifier}"${table.slice(0, 55)}_holders"`;
  return `SELECT u.n, (EXISTS (SELECT 1 FROM ${L} l WHERE l.key = u.key AND l.owner = u.token AND l.expires_at >= now())
      OR EXISTS (SELECT 1 FROM ${H} h WHERE h.key = u.key AND h.token = u.token AND h.expires_at >= now())) AS held
    FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(key, token, n) ORDER BY u.n`;
}

/** The statement's parameters for `grants`. */
export function leaseValidateParams(grants: readonly Grant[]): [string[], string[]] {
  return [grants.map((grant) => grant.key), grants.map((grant) => grant.token)];
}

/**
 * For 'postgres:advisory': asked on the session that took the lock, whether that session (its own
 * backend pid) still holds the advisory lock on `id`. A session lock is this exact grant for as long
 * as the session lives and holds it: a session ended by the server (pg_terminate_backend, a restart,
 * a dropped link) took the lock with it, and a new session is another grant.
 */
const holdsOwnLockSql = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
  AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1) AS held`;

export async function sessionHoldsLock(session: Session | undefined, id: string): Promise<boolean> {
  if (session === undefined || session.dead) return false;
  try {
    const result = await session.query<{ held: boolean }>(holdsOwnLockSql, [id]);
    return result.rows[0]?.held === true;
  } catch (error) {
    // A session the server ended (pg_terminate_backend, a shutdown) let go of its locks: that is an
    // answer, given before the client's 'error' event marks the session dead; end it here so every
    // lock on it is reported lost. A session that ended on the way (past its deadline too): the same.
    if (endedByServer(error)) session.kill(error as Error);
    if (session.dead) return false;
    throw error;
  }
}

/**
 * For holds whose validate is their session's liveness (read-write, permit, term): a session the
 * server ended answers false, as for a lock; any other failure stays unknown (rethrown).
 */
export function falseIfEnded(error: unknown): false {
  if (endedByServer(error) || endedByServer((error as { cause?: unknown } | null)?.cause)) return false;
  throw error;
}

/** 57P01 admin_shutdown (pg_terminate_backend), 57P02 crash_shutdown, or the connection closed under the statement. */
function endedByServer(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '57P01' || code === '57P02' || (error instanceof Error && /Connection terminated/i.test(error.message));
}
