import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StaleFenceError } from '../src/index.js';
import { admitFence, type Queryable } from '../src/postgres.js';
import { Clients, waitsOnLock } from './pg-support.js';

/**
 * Many transactions of one resource at once, each admitting a random fence and appending it to a
 * history row: whatever order they run and commit in, the committed history never goes down.
 */
let server: PostgresServerHandle;
let admin: pg.Client;
const clients = new Clients(() => server.url);

beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE TABLE history (id text PRIMARY KEY, fences bigint[] NOT NULL)');
});
afterEach(() => clients.endAll());
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

/** The check a reader might write by hand: read the recorded fence, refuse if newer. No row lock. */
async function readAndCheck(client: Queryable, resource: string, fence: number): Promise<void> {
  const { rows } = await client.query('SELECT fence::int AS fence FROM naive_fences WHERE resource = $1', [resource]);
  const newer = (rows[0] as { fence: number } | undefined)?.fence;
  if (newer !== undefined && newer > fence) throw new StaleFenceError(resource, fence, newer);
}

const record = (client: Queryable, resource: string, fence: number) =>
  client.query('INSERT INTO naive_fences VALUES ($1, $2) ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence', [resource, fence]);

async function history(id: string): Promise<number[]> {
  const { rows } = await admin.query<{ fences: string[] }>('SELECT fences::text[] AS fences FROM history WHERE id = $1', [id]);
  return (rows[0]?.fences ?? []).map(Number);
}

const append = (client: pg.Client, id: string, fence: number) =>
  client.query('UPDATE history SET fences = fences || $2::bigint WHERE id = $1', [id, fence]);

const nonDecreasing = (fences: readonly number[]): boolean => fences.every((fence, index) => index === 0 || fences[index - 1]! <= fence);

describe('concurrent admissions of one resource', () => {
  it('16 connections x 12 transactions, fences a little out of order: the committed history never goes down', async () => {
    await admin.query("INSERT INTO history VALUES ('stress', '{}')");
    const workers = await Promise.all(Array.from({ length: 16 }, () => clients.open()));
    let next = 100;
    let committed = 0;
    let refused = 0;
    await Promise.all(
      workers.map(async (client) => {
        for (let round = 0; round < 12; round += 1) {
          // Mostly newer than the last, sometimes a few behind: holders that stalled briefly.
          const fence = (next += 1) - Math.floor(Math.random() * 8);
          await client.query('BEGIN');
          try {
            await admitFence(client, 'stress', fence);
            await append(client, 'stress', fence);
            await client.query('COMMIT');
            committed += 1;
          } catch (error) {
            await client.query('ROLLBACK');
            if (!(error instanceof StaleFenceError)) throw error;
            expect(error.newerFence).toBeGreaterThan(fence);
            refused += 1;
          }
        }
      }),
    );
    const fences = await history('stress');
    expect(committed + refused).toBe(16 * 12);
    expect(fences).toHaveLength(committed);
    expect(nonDecreasing(fences), fences.join(',')).toBe(true);
    console.log(`[fence] stress: ${committed} committed, ${refused} refused; committed history non-decreasing`);
  });

  it('the history check fails where it should: a read-then-upsert without the row lock commits 6 after 7', async () => {
    await admin.query("INSERT INTO history VALUES ('naive', '{}')");
    await admin.query('CREATE TABLE naive_fences (resource text PRIMARY KEY, fence bigint NOT NULL)');
    await record(admin, 'naive', 5);
    const [a, b] = [await clients.open(), await clients.open()];
    await a.query('BEGIN');
    await readAndCheck(a, 'naive', 6);
    await b.query('BEGIN');
    await readAndCheck(b, 'naive', 7);
    await record(b, 'naive', 7);
    await append(b, 'naive', 7);
    await b.query('COMMIT');
    await record(a, 'naive', 6);
    await append(a, 'naive', 6);
    await a.query('COMMIT');
    expect(nonDecreasing(await history('naive'))).toBe(false);
  });

  it('the same steps through admitFence: the second transaction waits for the first and commits after it', async () => {
    await admin.query("INSERT INTO history VALUES ('fenced', '{}')");
    const [a, b] = [await clients.open(), await clients.open()];
    await a.query('BEGIN');
    await admitFence(a, 'fenced', 6);
    await b.query('BEGIN');
    const bDone = (async () => {
      await admitFence(b, 'fenced', 7);
      await append(b, 'fenced', 7);
      await b.query('COMMIT');
    })();
    await waitsOnLock(admin, b);
    await append(a, 'fenced', 6);
    await a.query('COMMIT');
    await bDone;
    expect(await history('fenced')).toEqual([6, 7]);
  });
});
