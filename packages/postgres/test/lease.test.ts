import { firstTrueWhileCalling, takesFreshKey } from '@deadbolt/conformance';
import { startPostgres, startProxy, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { type AcquireRequest } from '@deadbolt/core/adapter';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '@deadbolt/core';
import { createPostgresBackend, PostgresBackend, resolvePostgresOptions } from '../src/index.js';

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

const backend = (): PostgresBackend => createPostgresBackend(`${server.url}?mode=lease`) as PostgresBackend;
const request = (key: string, ttlMs = 10_000): AcquireRequest => ({ key, owner: 'o', ttlMs, onLost: () => undefined });

describe('postgres:lease', () => {
  it('the schema re-run after an upgrade (its probe function missing) takes no lock on tables in use', async () => {
    const first = createPostgresBackend(`${server.url}?mode=lease&table=upgraded`) as PostgresBackend;
    const held = await first.tryAcquire(request('before'));
    expect(held.acquired).toBe(true);
    await first.close();
    // A client of the previous release beside this one finds the functions it calls.
    const previous = await admin.query<{ lease: string | null; kinds: string | null; acquire: string | null; release: string | null }>(
      `SELECT to_regprocedure('"upgraded_acquire_v1"(text, text, float8, boolean, text, float8)')::text AS lease,
              to_regprocedure('"upgraded_kacquire_v1"(text, text, text, integer, text, float8, boolean, text, float8)')::text AS kinds,
              to_regprocedure('"upgraded_acquire_v2"(text, text, float8, boolean, text, float8)')::text AS acquire,
              to_regprocedure('"upgraded_release_v1"(text, text)')::text AS release`,
    );
    expect(previous.rows[0]).toEqual({
      lease: expect.any(String),
      kinds: expect.any(String),
      acquire: expect.any(String),
      release: expect.any(String),
    });
    // As if this release were new: the function it probes for is not there yet.
    await admin.query('DROP FUNCTION "upgraded_release_v2"(text, text)');
    const inUse = new pg.Client({ connectionString: server.url });
    await inUse.connect();
    const upgraded = createPostgresBackend(`${server.url}?mode=lease&table=upgraded&statementTimeoutMs=1500`) as PostgresBackend;
    try {
      // Lock traffic in flight: a write to every lease table, its transaction open.
      await inUse.query('BEGIN');
      await inUse.query(`INSERT INTO upgraded (key, owner, fence, expires_at) VALUES ('busy', 'x', 0, now())`);
      await inUse.query(`INSERT INTO upgraded_waiters (token, key, seq, channel, ttl_ms, deadline) VALUES ('t', 'busy', 0, 'c', 1, now())`);
      await inUse.query(`INSERT INTO upgraded_kinds (key) VALUES ('busy')`);
      await inUse.query(`INSERT INTO upgraded_holders (token, key, kind, fence, expires_at) VALUES ('t', 'busy', 'write', 0, now())`);
      const grant = await upgraded.tryAcquire(request('after'));
      expect(grant.acquired).toBe(true);
      if (grant.acquired) await upgraded.release(grant.grant);
    } finally {
      await inUse.query('ROLLBACK').catch(() => undefined);
      await inUse.end();
      await upgraded.close();
    }
  });

  it('a pooled connection gone silent is dropped at the statement deadline: its pool slot comes back, and its end is no uncaught error', async () => {
    const link = await startProxy(server.host, server.port);
    // Two pooled connections, both open (two acquires at once), then silent for good.
    const silent = createPostgresBackend(`${link.rewrite(server.url)}?mode=lease&pool=2&statementTimeoutMs=500`) as PostgresBackend;
    try {
      const opened = await Promise.all(['silent-a', 'silent-b'].map((key) => silent.tryAcquire(request(key))));
      for (const attempt of opened) if (attempt.acquired) await silent.release(attempt.grant);
      link.strand();
      const answeredAfterMs = await firstTrueWhileCalling(
        takesFreshKey(silent, (n) => request(`silent-${n}`)),
        100,
        20_000,
      );
      // Each silent connection held its statement, and its pool slot, until the kernel gave up
      // (hours): with both slots stuck no statement ran again. Now one deadline (500 ms + 1 s).
      expect(answeredAfterMs, 'no acquire was answered after the pooled connections went silent').toBeDefined();
      expect(answeredAfterMs!).toBeLessThan(1_500 + 2_000);
    } finally {
      await silent.close();
      // Closing the link ends the silent sockets: a connection still checked out would emit an
      // 'error' nobody hears (vitest fails the run on an uncaught exception).
      await link.close();
    }
  });

  it('the first statement (the schema probe) on a pooled connection gone silent is dropped at its deadline as well', async () => {
    const link = await startProxy(server.host, server.port);
    // The application's pool with one idle connection, silent before Deadbolt's first statement.
    const pool = new pg.Pool({ connectionString: link.rewrite(server.url), max: 1 });
    pool.on('error', () => undefined);
    (await pool.connect()).release();
    link.strand();
    const silent = createPostgresBackend({ mode: 'lease', pool, table: 'silent_first', statementTimeoutMs: 500 }) as PostgresBackend;
    try {
      const answeredAfterMs = await firstTrueWhileCalling(
        takesFreshKey(silent, (n) => request(`silent-first-${n}`)),
        100,
        20_000,
      );
      // The probe ran on pool.query, outside the dropped connection: its slot, the pool's only one, stayed stuck.
      expect(answeredAfterMs, 'no acquire was answered after the connection went silent').toBeDefined();
      expect(answeredAfterMs!).toBeLessThan(1_500 + 2_000);
    } finally {
      await silent.close();
      await Promise.race([pool.end(), new Promise((resolve) => setTimeout(resolve, 2_000))]);
      await link.close();
    }
  });

  it('a LISTEN session that ends while waiters wait is opened again by their heartbeat tick, not only by the next acquire', async () => {
    const [holder, waiter] = [backend(), backend()];
    const listening = async (): Promise<number[]> =>
      (
        await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE application_name = 'deadbolt' AND query LIKE 'LISTEN \"deadbolt_grant_%'",
        )
      ).rows.map((row) => row.pid);
    try {
      const held = await holder.tryAcquire(request('relisten'));
      expect(held.acquired).toBe(true);
      const waiting = waiter.acquire!(request('relisten'), Date.now() + 20_000, new AbortController().signal);
      await expect.poll(listening, { timeout: 10_000 }).toHaveLength(1);
      const [first] = await listening();
      await admin.query('SELECT pg_terminate_backend($1)', [first]);
      // The waiter's process shares one session with the holder's: a new one, with the grant channel LISTENed again.
      await expect.poll(async () => (await listening()).filter((pid) => pid !== first), { timeout: 10_000 }).toHaveLength(1);
      if (held.acquired) await holder.release(held.grant);
      const grant = await waiting;
      expect(grant).toBeDefined();
      await waiter.release(grant!);
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
    }
  });

  it('named statements the server no longer knows (a transaction-pooling PgBouncer) are turned off and the call resent unnamed', async () => {
    // One connection the test can reach: the application's pool of size 1.
    const pool = new pg.Pool({ connectionString: server.url, max: 1 });
    const b = createPostgresBackend({ mode: 'lease', pool, table: 'unnamed_fallback' }) as PostgresBackend;
    try {
      const first = await b.tryAcquire(request('named'));
      expect(first.acquired).toBe(true);
      // As if PgBouncer moved us to another server connection: our client thinks they are prepared.
      await pool.query('DEALLOCATE ALL');
      if (first.acquired) expect(await b.release(first.grant)).toBe(true);
      const second = await b.tryAcquire(request('named')); // 26000 at Bind, resent unnamed
      expect(second.acquired).toBe(true);
      if (second.acquired) expect(await b.release(second.grant)).toBe(true);
      // From now on unnamed: nothing new is prepared.
      await pool.query('DEALLOCATE ALL');
      const third = await b.tryAcquire(request('named'));
      if (third.acquired) expect(await b.release(third.grant)).toBe(true);
      expect(third.acquired).toBe(true);
      const prepared = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements');
      expect(prepared.rows[0]?.n).toBe(0);
    } finally {
      await b.close();
      await pool.end();
    }
  });

  it("runs on the application's own pg.Pool in its own schema, and never ends that pool", async () => {
    const pool = new pg.Pool({ connectionString: server.url, max: 3 });
    const b = createPostgresBackend({ mode: 'lease', pool, schema: 'app_locks', table: 'held' }) as PostgresBackend;
    try {
      const grant = await b.tryAcquire(request('own-pool'));
      expect(grant.acquired).toBe(true);
      const rows = await admin.query<{ key: string }>('SELECT key FROM app_locks.held');
      expect(rows.rows.map((row) => row.key)).toEqual(['own-pool']);
      if (grant.acquired) expect(await b.release(grant.grant)).toBe(true);
      await b.close();
      // Still usable: Deadbolt did not end the caller's pool.
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one).toBe(1);
    } finally {
      await b.close();
      await pool.end();
    }
    expect(() => resolvePostgresOptions(undefined, { mode: 'advisory', pool })).toThrow(InvalidArgumentError);
    expect(() => resolvePostgresOptions('postgres://h/db?mode=lease&schema=no-dash')).toThrow(InvalidArgumentError);
  });

  it('expiry is judged by the server clock, and the retry hint is the remaining lease', async () => {
    const b = backend();
    try {
      const first = await b.tryAcquire(request('server-time', 60_000));
      expect(first.acquired).toBe(true);
      const busy = await b.tryAcquire(request('server-time'));
      expect(busy.acquired).toBe(false);
      if (!busy.acquired) expect(busy.retryAfterMs).toBeGreaterThan(50_000);
      // Move the row's expiry into the SERVER's past: the lock is free at once, whatever the client clock says.
      await admin.query(`UPDATE deadbolt_locks SET expires_at = now() - interval '1 second' WHERE key = 'server-time'`);
      const second = await b.tryAcquire(request('server-time'));
      expect(second.acquired).toBe(true);
      if (first.acquired && second.acquired) expect(second.grant.fence!).toBeGreaterThan(first.grant.fence!);
    } finally {
      await b.close();
    }
  });

  it('a stale owner release or renew never touches the new holder row', async () => {
    const b = backend();
    try {
      const stale = await b.tryAcquire(request('stale', 10_000));
      await admin.query(`UPDATE deadbolt_locks SET expires_at = now() - interval '1 second' WHERE key = 'stale'`);
      const fresh = await b.tryAcquire(request('stale', 10_000));
      expect(stale.acquired && fresh.acquired).toBe(true);
      if (!stale.acquired || !fresh.acquired) return;
      expect(await b.release(stale.grant)).toBe(false);
      expect(await b.renew(stale.grant, 10_000)).toBe(false);
      const row = await admin.query<{ owner: string }>(`SELECT owner FROM deadbolt_locks WHERE key = 'stale'`);
      expect(row.rows[0]?.owner).toBe(fresh.grant.token);
      expect(await b.renewMany([stale.grant, fresh.grant], [10_000, 10_000])).toEqual([false, true]);
      expect(await b.release(fresh.grant)).toBe(true);
    } finally {
      await b.close();
    }
  });

  it('a release grants the lock in place to the queued waiter (new fence), whose client hears it on its own channel', async () => {
    const a = backend();
    const b = backend();
    try {
      const held = await a.tryAcquire(request('notify', 60_000));
      if (!held.acquired) throw new Error('not acquired');
      const granted: unknown[] = [];
      const contended = new Promise<void>((resolve) => {
        void b.acquire!({ ...request('notify', 60_000), onContended: resolve }, Date.now() + 30_000, new AbortController().signal).then(
          (grant) => granted.push(grant),
        );
      });
      await contended;
      const queued = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM deadbolt_locks_waiters WHERE key = 'notify'`);
      expect(queued.rows[0]?.n).toBe(1);
      const released = Date.now();
      expect(await a.release(held.grant)).toBe(true);
      // The lease is 60 s: only the grant in place (message or heartbeat) can hand it over this soon.
      await expect.poll(() => granted.length, { timeout: 5_000 }).toBe(1);
      expect(Date.now() - released).toBeLessThan(5_000);
      const grant = granted[0] as { token: string; fence: number };
      expect(grant.fence).toBeGreaterThan(held.grant.fence!);
      const row = await admin.query<{ owner: string }>(`SELECT owner FROM deadbolt_locks WHERE key = 'notify'`);
      expect(row.rows[0]?.owner).toBe(grant.token);
      expect((await admin.query(`SELECT 1 FROM deadbolt_locks_waiters WHERE key = 'notify'`)).rowCount).toBe(0);
      expect(await b.release(grant as never)).toBe(true);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
