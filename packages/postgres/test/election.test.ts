import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

let server: PostgresServerHandle;
let admin: pg.Client;
const clients: LockClient[] = [];
function client(): LockClient {
  const created = createLockClient(`${server.url}?mode=lease`);
  clients.push(created);
  return created;
}

beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((each) => each.close()));
});
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

describe('postgres:lease election', () => {
  it('the term is the lease row fence; deadbolt_locks_leaders names the leader only while its token holds a live lease', async () => {
    const election = client().elect('pg-sched', { id: 'node-a' });
    const first = await election[Symbol.asyncIterator]().next();
    expect(first.done).not.toBe(true);
    const { rows } = await admin.query<{ owner: string; fence: string; token: string; id: string }>(
      `SELECT l.owner, l.fence::text AS fence, n.token, n.id FROM deadbolt_locks l JOIN deadbolt_locks_leaders n ON n.key = l.key WHERE l.key = 'pg-sched'`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token).toBe(rows[0]!.owner);
    expect(rows[0]!.id).toBe('node-a');
    expect(first.value!.term).toBe(Number(rows[0]!.fence));
    expect(await election.leader()).toBe('node-a');
    // The lease runs out on the server: the record names nobody, even before anyone takes over.
    await admin.query(`UPDATE deadbolt_locks SET expires_at = now() - interval '1 second' WHERE key = 'pg-sched'`);
    expect(await election.leader()).toBeNull();
    await election.resign();
  });

  it('with ?schema=, the leaders table lives in that schema beside the lease table', async () => {
    const scoped = createLockClient(`${server.url}?mode=lease&schema=deadbolt_elect`);
    clients.push(scoped);
    const election = scoped.elect('pg-scoped', { id: 'node-s' });
    await election[Symbol.asyncIterator]().next();
    expect(await election.leader()).toBe('node-s');
    const { rows } = await admin.query<{ id: string }>(`SELECT id FROM deadbolt_elect.deadbolt_locks_leaders WHERE key = 'pg-scoped'`);
    expect(rows.map((row) => row.id)).toEqual(['node-s']);
    await election.resign();
  });
});
