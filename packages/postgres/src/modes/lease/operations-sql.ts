import { releaseChannel } from './sql.js';

/**
 * The operator API's SQL on the lease mode's tables (sql.ts, kinds-sql.ts, election.ts): one read
 * of every hold of a key, the statements of a forced release (one transaction, see
 * LeaseOperations.forceRelease), the marker table a forced holder reads, the live keys under a
 * prefix, and the election's leader with its fence. Every value is a parameter; `table` and
 * `schema` are validated identifiers (options.ts), quoted here as the other SQL files do.
 */
export function operationsSql(table: string, schema?: string) {
  const qualifier = schema === undefined ? '' : `"${schema}".`;
  const L = `${qualifier}"${table}"`;
  const W = `${qualifier}"${table.slice(0, 55)}_waiters"`;
  const G = `${qualifier}"${table.slice(0, 57)}_kinds"`;
  const H = `${qualifier}"${table.slice(0, 55)}_holders"`;
  const KW = `${qualifier}"${table.slice(0, 54)}_kwaiters"`;
  const leaders = `${qualifier}"${table.slice(0, 55)}_leaders"`;
  const F = `${qualifier}"${table.slice(0, 56)}_forced"`;
  // The lease mode's own functions (sql.ts, kinds-sql.ts name them so): the in-place grant to the
  // next live waiter, and the kinds row lock and grant.
  const fn = (name: string): string => `${qualifier}"${table.slice(0, 44)}_${name}_v1"`;
  const ttlLeft = `ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::float8`;
  return {
    /** The marker table: created on the first forced release or marker read (not part of the lock schema). */
    schema: `CREATE TABLE IF NOT EXISTS ${F} (token text PRIMARY KEY, forced_by text NOT NULL, until timestamptz NOT NULL)`,
    /** $1 key: every live hold (kind, fence, ttl left on the server's clock) and the live waiters of every queue. */
    inspect: `SELECT coalesce((SELECT json_agg(h) FROM (
          SELECT 'mutex' AS kind, fence::text AS fence, ${ttlLeft} AS ttl_ms FROM ${L}
            WHERE key = $1 AND owner <> '' AND expires_at > clock_timestamp()
          UNION ALL
          SELECT kind, fence::text, ${ttlLeft} FROM ${H} WHERE key = $1 AND expires_at > clock_timestamp()) h), '[]') AS holders,
        ((SELECT count(*) FROM ${W} WHERE key = $1 AND deadline >= clock_timestamp())
          + (SELECT count(*) FROM ${KW} WHERE key = $1 AND deadline >= clock_timestamp()))::int AS waiters`,
    /**
     * The forced release, run in order in one transaction. Lock row first, then the kinds row, the
     * order every lease function keeps. $1 key throughout.
     */
    force: {
      /** Locks the key's lock row; its token when a live holder has it. */
      lockRow: `SELECT owner, expires_at >= now() AS live FROM ${L} WHERE key = $1 FOR UPDATE`,
      /** Frees the row and hands it to the first live waiter in place (with its NOTIFY), as a release does. */
      freeRow: `UPDATE ${L} SET owner = '', expires_at = '-infinity' WHERE key = $1`,
      grantNext: `SELECT ${fn('grant')}($1) AS granted`,
      /** Nobody waited: no row (the invariant: no lock row, no waiters); election followers are woken. */
      deleteRow: `WITH gone AS (DELETE FROM ${L} WHERE key = $1 RETURNING key) SELECT pg_notify('${releaseChannel}', key) FROM gone`,
      /** Locks the key's kinds row (inserting it), then removes every read, write and permit hold. */
      kindsRow: `SELECT ${fn('krow')}($1)`,
      deleteHolds: `DELETE FROM ${H} WHERE key = $1 RETURNING token, expires_at >= now() AS live`,
      /** The queue's heads that now fit are granted (and notified); the kinds row goes when nothing is left. */
      grantKinds: `SELECT ${fn('kgrant')}($1)`,
      tidyKinds: `DELETE FROM ${G} g WHERE g.key = $1 AND NOT EXISTS (SELECT 1 FROM ${H} WHERE key = $1)
        AND NOT EXISTS (SELECT 1 FROM ${KW} WHERE key = $1)`,
      /** $1 tokens, $2 the forcing client's id, $3 ms the marker lasts; old markers go on the way. */
      mark: `WITH old AS (DELETE FROM ${F} WHERE until < now())
        INSERT INTO ${F} (token, forced_by, until) SELECT t, $2, now() + $3 * interval '1 millisecond' FROM unnest($1::text[]) AS t
        ON CONFLICT (token) DO UPDATE SET forced_by = EXCLUDED.forced_by, until = EXCLUDED.until`,
    },
    /** $1 a grant's token: who forced it away, while the marker lasts. */
    forcedBy: `SELECT forced_by FROM ${F} WHERE token = $1 AND until >= now()`,
    /**
     * $1 prefix, $2 the last key of the previous page ('' for the first), $3 page size: live keys that
     * start with the prefix (starts_with: no pattern, so nothing in the prefix is special), in byte order.
     */
    listKeys: `SELECT key FROM (
        SELECT key FROM ${L} WHERE owner <> '' AND expires_at >= now() AND starts_with(key, $1)
        UNION SELECT key FROM ${H} WHERE expires_at >= now() AND starts_with(key, $1)) k
      WHERE key COLLATE "C" > $2 ORDER BY key COLLATE "C" LIMIT $3`,
    /** $1 key: the election's leader (its candidate id, beside the live lease's token) and its fence. */
    leaderInfo: `SELECT n.id, l.fence::text AS fence FROM ${leaders} n
      JOIN ${L} l ON l.key = n.key AND l.owner = n.token AND l.expires_at >= now() WHERE n.key = $1`,
  };
}
