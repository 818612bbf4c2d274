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

describe('postgres:lease leave order', () => {
  /** Our sessions whose statement waits for a lock in the server. */
  const blocked = async (): Promise<number> =>
    (
      await admin.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'deadbolt' AND wait_event_type = 'Lock'",
      )
    ).rows[0]!.n;

  it('a waiter that gives up while its re-check is under way sends its leave after it, so the leave cannot overtake it', async () => {
    const [holder, waiter] = [0, 1].map(() => createPostgresBackend(`${server.url}?mode=lease`) as PostgresBackend) as [
      PostgresBackend,
      PostgresBackend,
    ];
    const key = 'leave-order';
    const permit = (ttlMs: number) => ({ key, owner: 'o', ttlMs, onLost: () => undefined, kind: { type: 'permit', permits: 1 } as const });
    const locker = new pg.Client({ connectionString: server.url });
    await locker.connect();
    try {
      // The only permit, for 3 s and never renewed: the waiter re-checks when that lease ends.
      const held = await holder.kinds!.tryAcquire(permit(3_000));
      expect(held.acquired).toBe(true);
      const controller = new AbortController();
      const waiting = waiter.kinds!.acquire!(permit(10_000), Date.now() + 30_000, controller.signal);
      await expect.poll(() => queuedOn(key)).toBe(1);
      // The key's row locked: the re-check's acquire function waits for it in the server.
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM deadbolt_locks_kinds WHERE key = $1 FOR UPDATE', [key]);
      await expect.poll(blocked, { timeout: 15_000 }).toBe(1);
      controller.abort();
      // A window for a leave sent at once (it would wait for the row too), then: only the re-check waits.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await blocked()).toBe(1);
      await locker.query('COMMIT');
      expect(await waiting).toBeUndefined();
      // The re-check queued the waiter again (or took the permit for it, had the lease ended); the leave after it undid that.
      expect(await queuedOn(key)).toBe(0);
      if (held.acquired) await holder.kinds!.release(held.grant);
      const after = await holder.kinds!.tryAcquire(permit(1_000));
      expect(after.acquired).toBe(true);
      if (after.acquired) await holder.kinds!.release(after.grant);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
      await Promise.all([holder.close(), waiter.close()]);
    }
  });
});
