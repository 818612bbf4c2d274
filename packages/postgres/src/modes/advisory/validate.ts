import type { Session } from './sessions.js';

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
