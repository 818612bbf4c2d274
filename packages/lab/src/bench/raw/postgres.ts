import pg from 'pg';
import type { Mutex } from '../subject.js';

/**
 * The bare PostgreSQL advisory-lock protocol on one dedicated connection, one round trip per call:
 * `pg_try_advisory_lock` first (all an uncontended cycle ever needs), and when that says busy the
 * blocking `pg_advisory_lock`, which parks the session in the server's lock queue until the holder
 * unlocks (no polling). `hashtextextended(key, 0)` maps the string key to the bigint lock id in the
 * server, the same for every session. One subject covers both shapes so that report.addRatios,
 * which matches on backend + workload + hold, finds exactly one raw row per measurement.
 */
export async function openRawPostgres(url: string): Promise<Mutex> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // a dropped connection surfaces on the next query instead
  await client.connect();
  return {
    async acquire(key) {
      const tried = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok', [key]);
      if (!tried.rows[0]?.ok) await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
      return async () => {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]);
      };
    },
    async close() {
      await client.end();
    },
  };
}
