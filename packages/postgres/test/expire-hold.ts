import type { PostgresServerHandle } from '@deadbolt/conformance/servers';
import pg from 'pg';
import { advisoryLockId, advisoryLockParts } from '../src/key-hash.js';

/** Runs `text` on an admin session of its own. */
async function onAdmin(server: PostgresServerHandle, text: string, values: unknown[]): Promise<void> {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    await admin.query(text, values);
  } finally {
    await admin.end();
  }
}

/** The suite's expireHold for 'postgres:lease': the key's lock row goes, as an early expiry would take it. */
export function deleteLeaseRow(server: PostgresServerHandle | undefined, fullKey: string): Promise<void> {
  return onAdmin(server!, 'DELETE FROM deadbolt_locks WHERE key = $1', [fullKey]);
}

/** The suite's expireHold for 'postgres:advisory': the session holding the key's advisory lock is ended (pg_terminate_backend). */
export function terminateHolder(server: PostgresServerHandle | undefined, fullKey: string): Promise<void> {
  const { classid, objid } = advisoryLockParts(advisoryLockId(fullKey));
  return onAdmin(
    server!,
    "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::oid AND objid = $2::oid AND objsubid = 1 AND granted",
    [classid, objid],
  );
}
