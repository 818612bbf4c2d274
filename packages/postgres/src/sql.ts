/**
 * The lease mode's SQL. Every check-and-act is one statement, judged by the server's clock (now()),
 * so client clock skew cannot break exclusion. Fences come from a sequence: globally increasing,
 * hence strictly increasing per key, and they survive a release deleting the row.
 * `t` is a validated identifier (options.ts), quoted here.
 */
export function leaseSql(table: string) {
  const t = `"${table}"`;
  const seq = `"${table.slice(0, 56)}_fence"`;
  return {
    schema: [
      `CREATE TABLE IF NOT EXISTS ${t} (key text PRIMARY KEY, owner text NOT NULL, fence bigint NOT NULL, expires_at timestamptz NOT NULL)`,
      `CREATE SEQUENCE IF NOT EXISTS ${seq}`,
    ],
    // Insert, or take over an expired row. The outer SELECT reads the snapshot from before the
    // upsert, so when nothing was taken it sees the holder's row: its remaining ms is the retry hint.
    acquire: `WITH taken AS (
        INSERT INTO ${t} AS l (key, owner, fence, expires_at)
        VALUES ($1, $2, nextval('${seq}'), now() + $3 * interval '1 millisecond')
        ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, fence = EXCLUDED.fence, expires_at = EXCLUDED.expires_at
        WHERE l.expires_at < now()
        RETURNING fence)
      SELECT (SELECT fence FROM taken)::text AS fence,
             (SELECT ceil(extract(epoch FROM expires_at - now()) * 1000) FROM ${t} WHERE key = $1)::float8 AS remaining_ms`,
    renew: `UPDATE ${t} SET expires_at = now() + $3 * interval '1 millisecond' WHERE key = $1 AND owner = $2 AND expires_at >= now()`,
    renewMany: `UPDATE ${t} AS l SET expires_at = now() + u.ttl * interval '1 millisecond'
      FROM unnest($1::text[], $2::text[], $3::float8[]) AS u(key, owner, ttl)
      WHERE l.key = u.key AND l.owner = u.owner AND l.expires_at >= now()
      RETURNING l.key, l.owner`,
    // Compare-and-delete plus the wake-up in one statement: pg_notify is delivered at commit.
    release: `WITH gone AS (DELETE FROM ${t} WHERE key = $1 AND owner = $2 RETURNING key, expires_at >= now() AS live)
      SELECT live, pg_notify('${releaseChannel}', key) FROM gone`,
    /** Is the lock free now (no row, or expired)? Used after LISTEN so a release is never missed. */
    isFree: `SELECT NOT EXISTS (SELECT 1 FROM ${t} WHERE key = $1 AND expires_at >= now()) AS free`,
  };
}

/** The LISTEN/NOTIFY channel a release wakes; the payload is the key. */
export const releaseChannel = 'deadbolt_released';

/**
 * The advisory mode's SQL. The fence is a per-key counter row bumped by the session that was just
 * granted the lock, in the same session right after the grant (inside the blocking acquire's transaction), so only a
 * holder ever bumps it and it strictly increases per key.
 */
export function advisorySql(fenceTable: string) {
  const f = `"${fenceTable}"`;
  return {
    schema: [`CREATE TABLE IF NOT EXISTS ${f} (key text PRIMARY KEY, fence bigint NOT NULL)`],
    bump: `INSERT INTO ${f} AS f (key, fence) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET fence = f.fence + 1 RETURNING fence::text AS fence`,
    // One round trip for the common case: try the lock and, only if granted, bump the fence. The CTE
    // with the volatile call is materialized, so the lock is tried exactly once.
    tryLockAndBump: `WITH attempt AS (SELECT pg_try_advisory_lock($1::bigint) AS ok),
      bumped AS (INSERT INTO ${f} AS f (key, fence) SELECT $2, 1 FROM attempt WHERE ok
        ON CONFLICT (key) DO UPDATE SET fence = f.fence + 1 RETURNING fence)
      SELECT attempt.ok, (SELECT fence::text FROM bumped) AS fence FROM attempt`,
    lock: `SELECT pg_advisory_lock($1::bigint)`,
    unlock: `SELECT pg_advisory_unlock($1::bigint) AS ok`,
    // Is this session still holding the lock? The keepalive of a held session (renew).
    holds: `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
      AND objsubid = 1 AND classid = $1::bigint::oid AND objid = $2::bigint::oid) AS held`,
  };
}
