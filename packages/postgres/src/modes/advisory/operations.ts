import type { LockHolder } from '@deadbolt/core';
import type { BackendInspection, OperationsDriver } from '@deadbolt/core/adapter';
import { advisoryLockId } from '../../key-hash.js';
import type { AdvisoryServer } from './server.js';

/**
 * The operator API in advisory mode: inspect only (capabilities.operations `['inspect']`), read
 * from `pg_locks` for the key's advisory ids. What the server cannot know is absent:
 * - `owner`: a session holds the lock, not an owner; the server keeps no owner id beside it.
 * - `fence`: a fence is the sequence value the holder took with its lock (fence.ts); nothing on
 *   the server ties it to the key afterwards.
 * - `ttlLeftMs`: a hold lasts as long as its session, which has no lease on the server.
 * Kinds: the key's exclusive lock is reported as 'mutex' (a read-write lock's write hold is the
 * same lock, so it shows as 'mutex' too), its shared locks as 'read', and each holder of a
 * semaphore's in-use lock (one per permit held: permits.ts) as 'permit'. `waiters` counts the
 * sessions queued for the key's lock or the semaphore's gate.
 *
 * No forceRelease: taking a hold back means pg_terminate_backend, which ends every lock of that
 * session (many locks share a session here). No list: pg_locks keeps a 64-bit hash, not the key.
 */
export class AdvisoryOperations implements OperationsDriver {
  /** The pg_locks read (a field so a test can break it). */
  statement = lockRows;

  constructor(private readonly server: AdvisoryServer) {}

  async inspect(key: string): Promise<BackendInspection> {
    const namespace = this.server.options.namespace;
    const idOf = (name: string): string => advisoryLockId(`${key}\u0000${name}`, namespace).toString();
    const ids = { lock: this.server.idOf(key), inUse: idOf('in use'), gate: idOf('gate') };
    const rows = await this.server.query<{ id: string; mode: string; granted: boolean }>('inspect', key, this.statement, [
      [ids.lock, ids.inUse, ids.gate],
    ]);
    const holders: LockHolder[] = [];
    let waiters = 0;
    for (const row of rows) {
      if (!row.granted) {
        if (row.id !== ids.inUse) waiters += 1;
        continue;
      }
      if (row.id === ids.lock) holders.push({ kind: row.mode === 'ShareLock' ? 'read' : 'mutex' });
      else if (row.id === ids.inUse) holders.push({ kind: 'permit' });
    }
    return { holders, waiters };
  }
}

/**
 * The advisory locks (bigint form: objsubid 1, the id split into classid and objid) of this
 * database on the given ids, granted or queued.
 */
const lockRows = `SELECT ((l.classid::bigint << 32) | l.objid::bigint)::text AS id, l.mode, l.granted
  FROM pg_locks l
  WHERE l.locktype = 'advisory' AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND ((l.classid::bigint << 32) | l.objid::bigint) = ANY($1::bigint[])`;
