/**
 * The fenced register in PostgreSQL, as the `@deadbolt/fence` README has users write: each write is
 * a transaction that first admits the writer's fence (admitFence), then updates the data, then
 * commits; a stale fence is refused inside the transaction, which is rolled back, so nothing lands.
 */
import { admitFence, createFenceTable, defaultFenceTable } from '@deadbolt/fence/postgres';
import pg from 'pg';
import type { FenceCheckedRegister } from './fenced-store.js';

const table = 'compare_fenced_registers';
/** A dead or frozen data server is a harness error within this, never a hang. */
const statementTimeoutMs = 10_000;

export async function postgresRegister(url: string, name: string): Promise<FenceCheckedRegister> {
  const client = new pg.Client({ connectionString: url, query_timeout: statementTimeoutMs, connectionTimeoutMillis: statementTimeoutMs });
  client.on('error', () => undefined); // a dropped connection surfaces on the next query instead
  await client.connect();
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS ${table} (name text PRIMARY KEY, value integer NOT NULL)`);
    // Ahead of the first write, so that write takes as long as the others.
    await createFenceTable(client);
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  const read = async (): Promise<number> => {
    const r = await client.query<{ value: number }>(`SELECT value FROM ${table} WHERE name = $1`, [name]);
    return r.rows[0]?.value ?? 0;
  };
  return {
    read,
    async write(fence, value) {
      await client.query('BEGIN');
      try {
        await admitFence(client, name, fence); // throws StaleFenceError for a stale fence
        await client.query(`INSERT INTO ${table} (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`, [
          name,
          value,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    },
    async final() {
      const value = await read();
      // The admitted fences table's documented columns: key (a hash), resource, fence.
      const r = await client.query<{ fence: string }>(`SELECT fence::text AS fence FROM ${defaultFenceTable} WHERE resource = $1`, [name]);
      const fence = r.rows[0]?.fence;
      return { value, fence: fence === undefined ? undefined : Number(fence) };
    },
    async close() {
      await client.end().catch(() => undefined);
    },
  };
}
