import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { InvalidArgumentError } from '@deadbolt/core';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StaleFenceError } from '../src/index.js';
import { admitFence, createFenceTable } from '../src/postgres.js';
import { Clients, waitsOnLock } from './pg-support.js';

let server: PostgresServerHandle;
let admin: pg.Client;
const clients = new Clients(() => server.url);

beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
});
afterEach(() => clients.endAll());
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

/** One transaction on its own connection: admit, then run `write`, then commit. */
async function fencedTransaction(resource: string, fence: number, write: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = await clients.open();
  await client.query('BEGIN');
  try {
    await admitFence(client, resource, fence);
    await write(client);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

const recorded = async (resource: string, table = 'deadbolt_admitted_fences'): Promise<string | undefined> =>
  (await admin.query<{ fence: string }>(`SELECT fence::text AS fence FROM "${table}" WHERE resource = $1`, [resource])).rows[0]?.fence;

describe('admitFence on PostgreSQL', () => {
  it('admits a first fence, a larger one and an equal one; refuses a smaller one with StaleFenceError, the write rolled back', async () => {
    await admin.query('CREATE TABLE IF NOT EXISTS accounts (id text PRIMARY KEY, balance int)');
    await admin.query("INSERT INTO accounts VALUES ('a', 0) ON CONFLICT (id) DO UPDATE SET balance = 0");
    const setBalance = (balance: number) => (client: pg.Client) =>
      client.query("UPDATE accounts SET balance = $1 WHERE id = 'a'", [balance]);
    await fencedTransaction('account:a', 5, setBalance(5));
    await fencedTransaction('account:a', 9, setBalance(9));
    await fencedTransaction('account:a', 9, setBalance(99));
    const stale = await fencedTransaction('account:a', 8, setBalance(8)).catch((error: unknown) => error);
    expect(stale).toBeInstanceOf(StaleFenceError);
    expect(stale).toMatchObject({ resource: 'account:a', fence: 8, newerFence: 9, code: 'STALE_FENCE' });
    expect((stale as Error).message).toMatch(/stale fence 8.*newer holder.*fence 9.*lost its lock.*do not retry/);
    expect((await admin.query("SELECT balance FROM accounts WHERE id = 'a'")).rows[0]).toEqual({ balance: 99 });
    expect(await recorded('account:a')).toBe('9');
  });

  it('a rolled-back admission leaves the recorded fence as it was', async () => {
    await fencedTransaction('rollback', 3, async () => undefined);
    await expect(
      fencedTransaction('rollback', 10, async () => {
        throw new Error('the write failed');
      }),
    ).rejects.toThrow('the write failed');
    expect(await recorded('rollback')).toBe('3');
    await fencedTransaction('rollback', 4, async () => undefined);
  });

  it('stores every resource name exactly, quotes and SQL and unicode included, each with its own record', async () => {
    const names = [
      "it's",
      '"; drop table deadbolt_admitted_fences; --',
      "'; drop table x; --",
      'зам\u00f6k 🔒',
      'a\\b',
      '$1',
      'x'.repeat(5_000),
      ' ',
    ];
    for (const [index, name] of names.entries()) await fencedTransaction(name, 100 + index, async () => undefined);
    for (const [index, name] of names.entries()) expect(await recorded(name), name).toBe(String(100 + index));
    for (const name of names) await expect(fencedTransaction(name, 1, async () => undefined)).rejects.toBeInstanceOf(StaleFenceError);
  });

  it('takes a resource name of any length (8000 random characters: no index row limit)', async () => {
    const long = Array.from({ length: 8_000 }, () => String.fromCharCode(0x21 + Math.floor(Math.random() * 0x5d))).join('');
    await fencedTransaction(long, 2, async () => undefined);
    expect(await recorded(long)).toBe('2');
    await expect(fencedTransaction(long, 1, async () => undefined)).rejects.toMatchObject({ newerFence: 2 });
  });

  it('keeps fences up to Number.MAX_SAFE_INTEGER exactly', async () => {
    await fencedTransaction('big', Number.MAX_SAFE_INTEGER - 1, async () => undefined);
    await fencedTransaction('big', Number.MAX_SAFE_INTEGER, async () => undefined);
    const stale = await fencedTransaction('big', Number.MAX_SAFE_INTEGER - 1, async () => undefined).catch((error: unknown) => error);
    expect(stale).toMatchObject({ newerFence: Number.MAX_SAFE_INTEGER });
  });

  it('uses the table and schema named in options, quoted, created on first use', async () => {
    await admin.query('CREATE SCHEMA IF NOT EXISTS "Fencing"');
    const client = await clients.open();
    await client.query('BEGIN');
    await admitFence(client, 'r', 7, { schema: 'Fencing', table: 'Order_Fences' });
    await client.query('COMMIT');
    const { rows } = await admin.query('SELECT resource, fence::int AS fence FROM "Fencing"."Order_Fences"');
    expect(rows).toEqual([{ resource: 'r', fence: 7 }]);
  });

  it('first callers that create the table at once all succeed, in transactions and outside them', async () => {
    const inTransactions = Array.from({ length: 6 }, (_, index) => fencedTransactionOn('race_tx', `r${index}`, index));
    await Promise.all(inTransactions);
    const outside = await Promise.all(Array.from({ length: 6 }, () => clients.open()));
    await Promise.all(outside.map((client) => createFenceTable(client, { table: 'race_autocommit' })));
    for (const [index, client] of outside.entries()) await fencedTransactionOn('race_autocommit', `r${index}`, index, client);
    expect((await admin.query('SELECT count(*)::int AS n FROM race_tx')).rows[0]).toEqual({ n: 6 });
    expect((await admin.query('SELECT count(*)::int AS n FROM race_autocommit')).rows[0]).toEqual({ n: 6 });
  });

  it('a table created in a transaction that rolled back is created again by the next call', async () => {
    const client = await clients.open();
    await client.query('BEGIN');
    await admitFence(client, 'r', 1, { table: 'rolled_back' });
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    await admitFence(client, 'r', 2, { table: 'rolled_back' });
    await client.query('COMMIT');
    expect(await recorded('r', 'rolled_back')).toBe('2');
  });

  it('createFenceTable creates the table ahead, once', async () => {
    await createFenceTable(admin, { table: 'ahead' });
    await createFenceTable(admin, { table: 'ahead' });
    expect((await admin.query("SELECT to_regclass('ahead') IS NOT NULL AS present")).rows[0]).toEqual({ present: true });
  });

  it('refuses a connection outside a transaction (its row lock would already be gone), and then the same fence inside one is admitted', async () => {
    const client = await clients.open();
    const outside = await admitFence(client, 'autocommit', 3).catch((error: unknown) => error);
    expect(outside).toBeInstanceOf(InvalidArgumentError);
    expect((outside as Error).message).toMatch(/outside a transaction.*BEGIN first/);
    await client.query('BEGIN');
    await admitFence(client, 'autocommit', 3);
    await client.query('COMMIT');
  });

  it("under REPEATABLE READ, an admission committed after the snapshot fails the transaction with pg's own serialization error (40001)", async () => {
    await fencedTransaction('rr', 1, async () => undefined);
    const client = await clients.open();
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await client.query('SELECT 1'); // the snapshot
    await fencedTransaction('rr', 9, async () => undefined);
    const error = await admitFence(client, 'rr', 10).catch((caught: unknown) => caught);
    await client.query('ROLLBACK');
    expect(error).toMatchObject({ code: '40001' });
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await admitFence(client, 'rr', 10);
    await client.query('COMMIT');
    expect(await recorded('rr')).toBe('10');
  });

  it("a server that stops answering: the client's own timeout error comes through, nothing hangs", async () => {
    const client = new pg.Client({ connectionString: server.url, query_timeout: 1_000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      await client.query('BEGIN');
      await server.pause();
      const started = performance.now();
      const error = await admitFence(client, 'paused', 1).catch((caught: unknown) => caught);
      expect(performance.now() - started).toBeLessThan(10_000);
      expect((error as Error).message).toMatch(/timeout/i);
    } finally {
      await server.resume();
      await client.end().catch(() => undefined);
    }
  });

  it('refuses a pg.Pool (each query would run outside the transaction) before any I/O', async () => {
    const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    try {
      await expect(admitFence(pool, 'r', 1)).rejects.toThrow(InvalidArgumentError);
      await expect(admitFence(pool, 'r', 1)).rejects.toThrow(/pool\.connect\(\)/);
      expect(pool.totalCount).toBe(0);
    } finally {
      await pool.end();
    }
  });
});

async function fencedTransactionOn(table: string, resource: string, fence: number, on?: pg.Client): Promise<void> {
  const client = on ?? (await clients.open());
  await client.query('BEGIN');
  await admitFence(client, resource, fence, { table });
  await client.query('COMMIT');
}

describe("the README's pattern for a table of your own with a fence column", () => {
  // The statement the README documents: the write and the check in one, a stale fence writes nothing.
  const upsert = `INSERT INTO documents (id, body, fence) VALUES ($1, $2, $3)
    ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, fence = EXCLUDED.fence
    WHERE documents.fence <= EXCLUDED.fence`;
  const write = async (id: string, body: string, fence: number): Promise<void> => {
    const result = await admin.query(upsert, [id, body, fence]);
    if (result.rowCount === 0) {
      const { rows } = await admin.query<{ fence: string }>('SELECT fence::text AS fence FROM documents WHERE id = $1', [id]);
      throw new StaleFenceError(id, fence, Number(rows[0]!.fence));
    }
  };

  it('writes with a first, larger and equal fence; a smaller one changes nothing and is reported stale', async () => {
    await admin.query('CREATE TABLE documents (id text PRIMARY KEY, body text NOT NULL, fence bigint NOT NULL)');
    await write("doc'1", 'one', 4);
    await write("doc'1", 'two', 6);
    await write("doc'1", 'three', 6);
    await expect(write("doc'1", 'stale', 5)).rejects.toMatchObject({ fence: 5, newerFence: 6 });
    expect((await admin.query('SELECT body, fence::int AS fence FROM documents')).rows).toEqual([{ body: 'three', fence: 6 }]);
  });
});

describe('admitFence orders the transactions of one resource', () => {
  it('a larger fence admitted while a smaller one is open waits for its commit, then goes after it', async () => {
    await admin.query('CREATE TABLE IF NOT EXISTS history (id text PRIMARY KEY, fences bigint[] NOT NULL)');
    await admin.query("INSERT INTO history VALUES ('ordered', '{}')");
    const [a, b] = [await clients.open(), await clients.open()];
    await a.query('BEGIN');
    await b.query('BEGIN');
    await admitFence(a, 'ordered', 6);
    const bAdmitted = admitFence(b, 'ordered', 7);
    await waitsOnLock(admin, b);
    await a.query("UPDATE history SET fences = fences || 6::bigint WHERE id = 'ordered'");
    await a.query('COMMIT');
    await bAdmitted;
    await b.query("UPDATE history SET fences = fences || 7::bigint WHERE id = 'ordered'");
    await b.query('COMMIT');
    expect((await admin.query("SELECT fences::text FROM history WHERE id = 'ordered'")).rows[0]).toEqual({ fences: '{6,7}' });
  });

  it('a smaller fence that arrives while a larger one is open waits for its commit, then is refused with the committed fence', async () => {
    const [a, b] = [await clients.open(), await clients.open()];
    await a.query('BEGIN');
    await b.query('BEGIN');
    await admitFence(b, 'late', 7);
    const aAdmitted = admitFence(a, 'late', 6).catch((error: unknown) => error);
    await waitsOnLock(admin, a);
    await b.query('COMMIT');
    expect(await aAdmitted).toMatchObject({ name: 'StaleFenceError', fence: 6, newerFence: 7 });
    await a.query('ROLLBACK');
  });

  it('a refused transaction holds the row until it ends: a larger fence waits for it', async () => {
    await fencedTransaction('held', 5, async () => undefined);
    const [refused, next] = [await clients.open(), await clients.open()];
    await refused.query('BEGIN');
    await expect(admitFence(refused, 'held', 4)).rejects.toBeInstanceOf(StaleFenceError);
    await next.query('BEGIN');
    const nextAdmitted = admitFence(next, 'held', 6);
    await waitsOnLock(admin, next);
    await refused.query('ROLLBACK');
    await nextAdmitted;
    await next.query('COMMIT');
    expect(await recorded('held')).toBe('6');
  });
});
