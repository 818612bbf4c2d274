/**
 * The lease mode's SQL. Every check-and-act is one statement, judged by the server's clock (now()),
 * so client clock skew cannot break exclusion. Fences come from a sequence: globally increasing,
 * hence strictly increasing per key, and they survive a release deleting the row.
 * `t` is a validated identifier (options.ts), quoted here.
 */
export function leaseSql(table: string, schema?: string) {
  const qualifier = schema === undefined ? '' : `"${schema}".`;
  const t = `${qualifier}"${table}"`;
  const seq = `${qualifier}"${table.slice(0, 56)}_fence"`;
  return {
    schema: [
      ...(schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS "${schema}"`]),
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
