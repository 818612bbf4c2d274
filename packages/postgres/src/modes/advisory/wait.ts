import type { FenceNames } from '../../fence.js';
import { createOnce } from '../../ddl.js';

/** The NOTICE the wait function raises when the lock is busy, just before it joins the server's queue. */
export const queuedNotice = 'deadbolt: queued';

/**
 * The advisory mutex's blocking wait as one server function, so that a waiter that already knows
 * the key is contended (its last attempt found it busy) queues in ONE round trip instead of a failed
 * pg_try_advisory_lock and then pg_advisory_lock (issue 18: in a 10-worker hand-off loop the try
 * was a third of each acquisition's statements, client writes and reads).
 *
 * Core's 'contended' event must still come as the waiter queues (tests order waiters by it): a
 * NOTICE is sent and flushed to the client at once, in the middle of the statement (elog.c flushes
 * every message to the frontend), so the function tries the lock, and when busy raises the notice
 * and only then blocks. client_min_messages is raised for the transaction so that a deployment that
 * hides notices still delivers it; a NOTICE is below the default log_min_messages (no server log).
 * lock_timeout (the caller's wait) is set transaction-locally before the wait; statement_timeout
 * must be raised by the caller before the statement starts (SET LOCAL in the same simple query).
 *
 * The fence counter is taken after the grant in the same statement, as by the try (fence.ts).
 */
export function advisoryWaitSql(names: FenceNames) {
  const body = `CREATE FUNCTION ${names.wait}(id bigint, wait_ms integer) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NOT pg_try_advisory_lock(id) THEN
    PERFORM set_config('client_min_messages', 'notice', true);
    PERFORM set_config('lock_timeout', wait_ms::text, true);
    RAISE NOTICE '${queuedNotice}';
    PERFORM pg_advisory_lock(id);
  END IF;
  RETURN nextval('${names.sequence}')::text;
END $fn$`;
  return {
    schema: createOnce(names.wait, '(bigint, integer)', body),
    /**
     * `id` and `waitMs` are integers we computed (no user text), inlined because the SET LOCAL
     * before it takes no parameters and a simple query carries both statements in one round trip.
     */
    wait: (id: string, waitMs: number, statementTimeoutMs: number): string =>
      `SET LOCAL statement_timeout = ${statementTimeoutMs}; SELECT ${names.wait}(${id}::bigint, ${waitMs}) AS counter`,
  };
}
