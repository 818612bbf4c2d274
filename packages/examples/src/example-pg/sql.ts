/**
 * Every statement the example backend sends. Each check-and-act is ONE statement, so the server
 * decides it atomically, on its own clock (`clock_timestamp()`), and a row lock serialises
 * contenders on a key: there is no read-then-write window for another client to slip into.
 * `table` has been checked by options.ts (a plain identifier): it is the only text spliced in.
 */
export interface ExamplePgStatements {
  /** Creates the table and its fence sequence once; concurrent first calls wait on one advisory lock. */
  readonly schema: string;
  /** $1 key, $2 token, $3 ttl ms. A row only when the key was free or its lease had run out. */
  readonly acquire: string;
  /** $1 key, $2 token, $3 ttl ms. A row only when the hold is still ours and live. */
  readonly renew: string;
  /** $1 keys, $2 tokens, $3 ttl ms (arrays): the tokens whose holds were extended. */
  readonly renewMany: string;
  /** $1 key, $2 token. Deletes only our own row; `live` says whether it had not expired yet. */
  readonly release: string;
  /** $1 key, $2 token. A row while this exact grant holds. */
  readonly validate: string;
}

export function examplePgStatements(table: string): ExamplePgStatements {
  const fence = `${table}_fence`;
  const lease = (ttl: string) => `clock_timestamp() + ${ttl} * interval '1 millisecond'`;
  return {
    schema: `DO $schema$ BEGIN
      PERFORM pg_advisory_xact_lock(hashtext('deadbolt example-pg schema'));
      CREATE SEQUENCE IF NOT EXISTS ${fence};
      CREATE TABLE IF NOT EXISTS ${table} (
        key text PRIMARY KEY,
        token text NOT NULL,
        fence bigint NOT NULL,
        expires_at timestamptz NOT NULL
      );
    END $schema$`,
    // A conflicting row is taken over only when its lease ran out: ON CONFLICT locks that row, and
    // the WHERE is re-checked on its newest version, so two contenders never both win.
    acquire: `INSERT INTO ${table} AS held (key, token, fence, expires_at)
      VALUES ($1, $2, nextval('${fence}'), ${lease('$3::float8')})
      ON CONFLICT (key) DO UPDATE SET token = excluded.token, fence = excluded.fence, expires_at = excluded.expires_at
      WHERE held.expires_at <= clock_timestamp()
      RETURNING fence`,
    renew: `UPDATE ${table} SET expires_at = ${lease('$3::float8')}
      WHERE key = $1 AND token = $2 AND expires_at > clock_timestamp()
      RETURNING key`,
    renewMany: `UPDATE ${table} AS held SET expires_at = ${lease('mine.ttl_ms')}
      FROM unnest($1::text[], $2::text[], $3::float8[]) AS mine (key, token, ttl_ms)
      WHERE held.key = mine.key AND held.token = mine.token AND held.expires_at > clock_timestamp()
      RETURNING held.token`,
    release: `DELETE FROM ${table} WHERE key = $1 AND token = $2
      RETURNING expires_at > clock_timestamp() AS live`,
    validate: `SELECT 1 FROM ${table} WHERE key = $1 AND token = $2 AND expires_at > clock_timestamp()`,
  };
}
