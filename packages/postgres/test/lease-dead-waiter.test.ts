import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type Lock } from '@deadbolt/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresBackend, type PostgresBackend } from '../src/index.js';

let server: PostgresServerHandle;
let admin: pg.Client;
beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

const waiterLeaseMs = 3_000;
const holdMs = 60_000;

const queuedOn = async (key: string): Promise<number> =>
  (await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM deadbolt_locks_kwaiters WHERE key = $1', [key])).rows[0]!.n;

describe('postgres:lease semaphore queue', () => {
  it('a waiter killed at the head of the queue does not keep a freed permit from the next one beyond its waiter lease, however long the others hold', async () => {
    const backends: PostgresBackend[] = [];
    const client = () => {
      const backend = createPostgresBackend(`${server.url}?mode=lease&waiterLeaseMs=${waiterLeaseMs}`) as PostgresBackend;
      backends.push(backend);
      return { backend, client: createLockClient({ backend }) };
    };
    const key = 'dead-head';
    const sem = (c: ReturnType<typeof client>) => c.client.semaphore(key, { permits: 3 });
    try {
      const holders: Lock[] = [];
      for (let i = 0; i < 3; i += 1) holders.push(await sem(client()).acquire({ ttlMs: holdMs }));
      // The head waiter queues, then its process dies without leaving the queue.
      const dead = client();
      const deadWait = sem(dead)
        .acquire({ ttlMs: holdMs, waitMs: 30_000 })
        .catch(() => undefined);
      await expect.poll(() => queuedOn(key), { timeout: 10_000 }).toBe(1);
      await dead.backend.simulateCrash();
      await deadWait;
      const next = client();
      const nextWait = sem(next).acquire({ ttlMs: holdMs, waitMs: 20_000 });
      nextWait.catch(() => undefined);
      await expect.poll(() => queuedOn(key), { timeout: 10_000 }).toBe(2);
      // One permit is freed while the other two stay held (renewed) for the rest of the case.
      const released = Date.now();
      await holders[0]!.release();
      const permit = await nextWait;
      const waitedMs = Date.now() - released;
      console.info(
        `[dead head] the next waiter got the freed permit after ${waitedMs} ms (waiter lease ${waiterLeaseMs} ms, holds ${holdMs} ms)`,
      );
      // The dead entry (or the permit it was granted) lasts its waiter lease at most, then the next
      // waiter's heartbeat finds it: a tick later. Slack for a loaded machine, far below the holds.
      expect(waitedMs).toBeLessThan(waiterLeaseMs + waiterLeaseMs / 3 + 6_000);
      expect(holders[1]!.held && holders[2]!.held).toBe(true);
      await Promise.all([permit, holders[1]!, holders[2]!].map((lock) => lock.release()));
    } finally {
      await Promise.all(backends.map((backend) => backend.close()));
    }
  }, 60_000);
});
