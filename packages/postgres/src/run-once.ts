import { randomUUID } from 'node:crypto';
import type { AcquireRequest, Grant, RunsDriver } from '@deadbolt/core/adapter';
import type { ResolvedPostgresOptions } from './settings.js';
import { schemaOnce } from './schema-once.js';
import type { StatementPool } from './statement-pool.js';

/**
 * Run-once jobs on a table of their own, in every mode: an advisory lock dies with its session, and a
 * run's hold must outlive the process (ShedLock's JDBC provider). One row per job: the claim's end
 * on the server's clock, its holder and token, a fence counted per job, and the last run's record.
 * A claim is one conditional upsert (free when `locked_until` has passed, by clock_timestamp(), the
 * server's own now even when the statement waited on another's row lock).
 */
export function runOnceSql(table: string, schema?: string) {
  const qualifier = schema === undefined ? '' : `"${schema}".`;
  const R = `${qualifier}"${table.slice(0, 58)}_runs"`;
  const ms = `* interval '1 millisecond'`;
  return {
    schema: [
      ...(schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS "${schema}"`]),
      `CREATE TABLE IF NOT EXISTS ${R} (name text PRIMARY KEY, locked_until timestamptz NOT NULL, locked_by text NOT NULL,
        token text NOT NULL, fence bigint NOT NULL, run_id text, record text)`,
    ],
    claim: `INSERT INTO ${R} AS r (name, locked_until, locked_by, token, fence)
      VALUES ($1, clock_timestamp() + $2::bigint ${ms}, $3, $4, 1)
      ON CONFLICT (name) DO UPDATE SET locked_until = EXCLUDED.locked_until, locked_by = EXCLUDED.locked_by,
        token = EXCLUDED.token, fence = r.fence + 1
      WHERE r.locked_until <= clock_timestamp()
      RETURNING fence::text AS fence`,
    shorten: `UPDATE ${R} SET locked_until = clock_timestamp() + $3::bigint ${ms}
      WHERE name = $1 AND token = $2 AND locked_until > clock_timestamp()`,
    save: `UPDATE ${R} SET run_id = $2, record = $3 WHERE name = $1 AND ($4::text IS NULL OR run_id = $4)`,
    load: `SELECT record FROM ${R} WHERE name = $1`,
  };
}

/** claimRun, shortenRun, saveRun and loadRun on the backend's statement pool (typed errors, deadlines). */
export function runOnceOn(options: ResolvedPostgresOptions, statements: StatementPool): Required<RunsDriver> {
  const sql = runOnceSql(options.table, options.schema);
  const ensureTable = schemaOnce(async (key: string) => {
    for (const statement of sql.schema) await statements.query('runOnce', key, statement, []);
  });
  return {
    async claimRun(request: AcquireRequest): Promise<Grant | undefined> {
      await ensureTable(request.key);
      const token = randomUUID();
      const result = await statements.query<{ fence: string }>('runOnce', request.key, sql.claim, [
        request.key,
        request.ttlMs,
        request.owner,
        token,
      ]);
      const row = result.rows[0];
      return row === undefined ? undefined : { key: request.key, owner: request.owner, token, fence: Number(row.fence) };
    },
    async shortenRun(grant: Grant, keepMs: number): Promise<boolean> {
      return (await statements.query('runOnce', grant.key, sql.shorten, [grant.key, grant.token, keepMs])).rowCount === 1;
    },
    async saveRun(key: string, runId: string, record: string, replaces?: string): Promise<boolean> {
      return (await statements.query('runOnce', key, sql.save, [key, runId, record, replaces ?? null])).rowCount === 1;
    },
    async loadRun(key: string): Promise<string | undefined> {
      await ensureTable(key);
      const result = await statements.query<{ record: string | null }>('lastRun', key, sql.load, [key]);
      return result.rows[0]?.record ?? undefined;
    },
  };
}
