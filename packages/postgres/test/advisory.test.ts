import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { BackendUnavailableError, InvalidArgumentError } from '@deadbolt/core';
import { type AcquireRequest, type Grant } from '@deadbolt/core/adapter';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advisoryLockId, advisoryLockParts, PostgresBackend, createPostgresBackend, resolvePostgresOptions } from '../src/index.js';

let server: PostgresServerHandle;
let admin: pg.Client;
beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Client({ connectionString: server.url });
  admin.on('error', () => undefined); // the crash case ends it
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

// Statement deadlines well above the default 2 s: on a CI machine running three packages at once, a
// blocking wait once got no answer within its wait + 4.5 s and failed typed (BackendUnavailableError)
// instead of timing out. What these cases check is the server's queue, not the deadline (that is
// the dead-server case's, with its own URL).
const backend = (): PostgresBackend => createPostgresBackend(`${server.url}?mode=advisory&statementTimeoutMs=6000`) as PostgresBackend;
function request(key: string, onLost: AcquireRequest['onLost'] = () => undefined): AcquireRequest {
  return { key, owner: 'o', ttlMs: 1_000, onLost };
}
async function advisoryLocks(key: string): Promise<Array<{ pid: number; granted: boolean }>> {
  const { classid, objid } = advisoryLockParts(advisoryLockId(key));
  const result = await admin.query<{ pid: number; granted: boolean }>(
    `SELECT pid, granted FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND classid = $1::bigint::oid AND objid = $2::bigint::oid`,
    [classid, objid],
  );
  return result.rows;
}

describe('key hash', () => {
  it('matches the documented SQL expression', async () => {
    for (const [key, namespace] of [
      ['order:1', ''],
      ['ünï code/{x}', 'app'],
    ] as const) {
      const sql = await admin.query<{ id: string }>(
        `SELECT ('x' || substr(encode(sha256(convert_to($1, 'UTF8') || '\\x00'::bytea || convert_to($2, 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint::text AS id`,
        [namespace, key],
      );
      expect(sql.rows[0]?.id).toBe(advisoryLockId(key, namespace).toString());
      // And the documented pg_locks expression finds it while held.
      const b = createPostgresBackend({ connectionString: server.url, mode: 'advisory', namespace }) as PostgresBackend;
      try {
        const attempt = await b.tryAcquire(request(key));
        expect(attempt.acquired).toBe(true);
        const seen = await admin.query(
          `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND (classid::bigint << 32 | objid::bigint) = $1::bigint`,
          [sql.rows[0]!.id],
        );
        expect(seen.rows).toHaveLength(1);
      } finally {
        await b.close();
      }
    }
  });
});

describe('options', () => {
  it('rejects unknown URL parameters before I/O and keeps libpq ones', () => {
    expect(() => resolvePostgresOptions('postgres://u:p@h:1/db?mode=advisory&bogus=1')).toThrow(InvalidArgumentError);
    expect(resolvePostgresOptions('postgres://u:p@h:1/db?sslmode=disable&prefix=x').connectionString).toContain('sslmode=disable');
    expect(() => resolvePostgresOptions('postgres://h/db?mode=nope')).toThrow(InvalidArgumentError);
  });
});

describe('postgres:advisory', () => {
  it('a plain pg session sees the lock in pg_locks under the documented id', async () => {
    const b = backend();
    try {
      const attempt = await b.tryAcquire(request('visible'));
      expect(attempt.acquired).toBe(true);
      const rows = await advisoryLocks('visible');
      expect(rows).toHaveLength(1);
      expect(rows[0]?.granted).toBe(true);
      if (attempt.acquired) expect(await b.release(attempt.grant)).toBe(true);
      expect(await advisoryLocks('visible')).toHaveLength(0);
    } finally {
      await b.close();
    }
  });

  it('blocking acquire waits in the server queue, times out and leaves nothing', async () => {
    const a = backend();
    const b = backend();
    try {
      const held = await a.tryAcquire(request('queue'));
      expect(held.acquired).toBe(true);
      const started = Date.now();
      const waiting = b.acquire!(request('queue'), Date.now() + 800, new AbortController().signal);
      // While waiting, the server shows one granted and one waiting entry.
      await expect.poll(async () => (await advisoryLocks('queue')).length, { timeout: 5_000 }).toBe(2);
      expect(await waiting).toBeUndefined();
      expect(Date.now() - started).toBeGreaterThanOrEqual(700);
      expect((await advisoryLocks('queue')).filter((row) => !row.granted)).toHaveLength(0);
      if (held.acquired) await a.release(held.grant);
      expect(await advisoryLocks('queue')).toHaveLength(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('abort mid-wait returns promptly and leaves nothing', async () => {
    const a = backend();
    const b = backend();
    try {
      const held = await a.tryAcquire(request('abort'));
      const controller = new AbortController();
      const waiting = b.acquire!(request('abort'), Date.now() + 30_000, controller.signal);
      await expect.poll(async () => (await advisoryLocks('abort')).length, { timeout: 5_000 }).toBe(2);
      const aborted = Date.now();
      controller.abort();
      expect(await waiting).toBeUndefined();
      expect(Date.now() - aborted).toBeLessThan(3_000);
      expect(await advisoryLocks('abort')).toHaveLength(1);
      if (held.acquired) await a.release(held.grant);
      expect(await advisoryLocks('abort')).toHaveLength(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a waiter is granted on release, with a larger fence', async () => {
    const a = backend();
    const b = backend();
    try {
      const first = await a.tryAcquire(request('handoff'));
      const waiting = b.acquire!(request('handoff'), Date.now() + 10_000, new AbortController().signal);
      await expect.poll(async () => (await advisoryLocks('handoff')).length, { timeout: 5_000 }).toBe(2);
      if (first.acquired) await a.release(first.grant);
      const second = await waiting;
      expect(second).toBeDefined();
      if (first.acquired) expect(second!.fence!).toBeGreaterThan(first.grant.fence!);
      await b.release(second!);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a waiter that found the key busy before queues without a try, and reports contention as it queues', async () => {
    const a = backend();
    const b = backend();
    const tries = async (): Promise<number> => {
      const result = await admin.query<{ n: string }>(
        `SELECT coalesce(sum(calls), 0)::text AS n FROM pg_stat_statements WHERE query LIKE 'SELECT CASE WHEN pg_try_advisory_lock(id)%'`,
      );
      return Number(result.rows[0]?.n);
    };
    const waitFor = (contended: () => void): Promise<Grant | undefined> =>
      b.acquire!({ ...request('requeue'), onContended: contended }, Date.now() + 10_000, new AbortController().signal);
    try {
      await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      for (let round = 0; round < 2; round += 1) {
        const held = await a.tryAcquire(request('requeue'));
        if (!held.acquired) throw new Error('the key should be free');
        const triesBefore = await tries();
        let queued!: () => void;
        const contended = new Promise<void>((resolve) => (queued = resolve));
        const waiting = waitFor(() => queued());
        // Reported while a still holds: the server has queued b (or is about to).
        await contended;
        await expect.poll(async () => (await advisoryLocks('requeue')).length, { timeout: 5_000 }).toBe(2);
        // The first wait tried first; the second knew the key was contended and sent no try.
        expect((await tries()) - triesBefore).toBe(round === 0 ? 1 : 0);
        await a.release(held.grant);
        const granted = await waiting;
        expect(granted!.fence!).toBeGreaterThan(held.grant.fence!);
        await b.release(granted!);
      }
      expect(await advisoryLocks('requeue')).toHaveLength(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('pg_terminate_backend of the holder fires onLost and renew returns false', async () => {
    const b = backend();
    try {
      const lost = new Promise<Grant>((resolve) => {
        void b.tryAcquire(request('terminate', (grant) => resolve(grant))).then(async (attempt) => {
          expect(attempt.acquired).toBe(true);
          const [row] = await advisoryLocks('terminate');
          await admin.query('SELECT pg_terminate_backend($1)', [row!.pid]);
        });
      });
      const grant = await lost;
      expect(await b.renew(grant, 1_000)).toBe(false);
      // The FATAL message (our onLost) arrives just before the terminated backend exits and unlocks.
      await expect.poll(async () => (await advisoryLocks('terminate')).length, { timeout: 5_000 }).toBe(0);
    } finally {
      await b.close();
    }
  });

  it('holds 2,000 locks from one client on at most `pool` (10) connections, one statement per burst', async () => {
    const b = backend();
    try {
      const attempts = await Promise.all(Array.from({ length: 2_000 }, (_, i) => b.tryAcquire(request(`many-${i}`))));
      expect(attempts.every((attempt) => attempt.acquired)).toBe(true);
      const sessions = await admin.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM pg_stat_activity WHERE application_name = 'deadbolt'`,
      );
      expect(Number(sessions.rows[0]?.n)).toBeGreaterThan(0);
      expect(Number(sessions.rows[0]?.n)).toBeLessThanOrEqual(10);
      const grants = attempts.flatMap((attempt) => (attempt.acquired ? [attempt.grant] : []));
      expect(new Set(grants.map((grant) => grant.fence)).size).toBe(grants.length);
      expect(
        await b.renewMany(
          grants,
          grants.map(() => 1_000),
        ),
      ).toEqual(grants.map(() => true));
      expect((await Promise.all(grants.map((grant) => b.release(grant)))).every(Boolean)).toBe(true);
      const left = await admin.query<{ n: string }>(`SELECT count(*)::text AS n FROM pg_locks WHERE locktype = 'advisory'`);
      expect(left.rows[0]?.n).toBe('0');
    } finally {
      await b.close();
    }
  });

  it('two owners in one client never share a session for one key', async () => {
    const b = backend();
    try {
      const [first, second] = await Promise.all([b.tryAcquire(request('shared')), b.tryAcquire({ ...request('shared'), owner: 'other' })]);
      expect([first.acquired, second.acquired].filter(Boolean)).toHaveLength(1);
      const holder = first.acquired ? first.grant : second.acquired ? second.grant : undefined;
      expect((await b.tryAcquire({ ...request('shared'), owner: 'third' })).acquired).toBe(false);
      await b.release(holder!);
      expect(await advisoryLocks('shared')).toHaveLength(0);
    } finally {
      await b.close();
    }
  });

  it('fences grow across a crash (new epoch) and a clean restart (same epoch)', async () => {
    const epochOf = (fence: number): number => Math.floor(fence / 2 ** 36);
    const takeFence = async (): Promise<number> => {
      const b = backend();
      try {
        const attempt = await b.tryAcquire(request('epoch'));
        if (!attempt.acquired) throw new Error('not acquired');
        await b.release(attempt.grant);
        return attempt.grant.fence!;
      } finally {
        await b.close();
      }
    };
    const before = await takeFence();
    // A crash: SIGKILL of any backend makes the postmaster reinitialise and run crash recovery,
    // which empties unlogged tables (the postmaster's start time does not change).
    const victim = new pg.Client({ connectionString: server.url });
    victim.on('error', () => undefined);
    await victim.connect();
    const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    // The kill runs on the server (COPY TO PROGRAM, as the superuser): a pid from pg_backend_pid()
    // is in the server's pid namespace, which in a container is not ours, so process.kill() here
    // would miss (or hit an unrelated process of this machine).
    const killer = new pg.Client({ connectionString: server.url });
    killer.on('error', () => undefined);
    await killer.connect();
    await killer.query(`DO $$ BEGIN EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'kill -9 ${pid}'); END $$`).catch(() => undefined);
    await killer.end().catch(() => undefined);
    await victim.end().catch(() => undefined);
    let afterCrash: number | undefined;
    const until = Date.now() + 20_000;
    while (afterCrash === undefined) {
      afterCrash = await takeFence().catch((error: unknown) => {
        if (Date.now() > until) throw error;
        return new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 100));
      });
    }
    expect(afterCrash).toBeGreaterThan(before);
    expect(epochOf(afterCrash)).toBe(epochOf(before) + 1);
    await server.restart();
    const afterRestart = await takeFence();
    expect(afterRestart).toBeGreaterThan(afterCrash);
    expect(epochOf(afterRestart)).toBe(epochOf(afterCrash));
    await admin.end().catch(() => undefined);
    admin = new pg.Client({ connectionString: server.url });
    admin.on('error', () => undefined);
    await admin.connect();
  });

  it('a dead server gives BackendUnavailableError within the deadline', async () => {
    const b = createPostgresBackend('postgres://postgres:deadbolt@127.0.0.1:1/postgres?mode=advisory&statementTimeoutMs=500');
    try {
      const started = Date.now();
      await expect(b.tryAcquire(request('dead'))).rejects.toBeInstanceOf(BackendUnavailableError);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await b.close();
    }
  });
});

describe('postgres:advisory semaphore permits record', () => {
  const permitRequest = (key: string, permits: number): AcquireRequest => ({ ...request(key), kind: { type: 'permit', permits } });
  const recorded = async (key: string): Promise<number | undefined> =>
    (await admin.query<{ permits: number }>('SELECT permits FROM deadbolt_fences_permits WHERE key = $1', [key])).rows[0]?.permits;

  it('the last release clears it; a crashed holder leaves a stale record that the next size replaces', async () => {
    const [a, b] = [backend(), backend()];
    try {
      const first = await a.kinds!.acquire!(permitRequest('sem:record', 3), Date.now() + 2_000, new AbortController().signal);
      expect(first).toBeDefined();
      expect(await recorded('sem:record')).toBe(3);
      await a.kinds!.release(first!);
      expect(await recorded('sem:record')).toBeUndefined();
      // A holder whose sessions end without a release (a crash): its record outlives it, unused.
      await b.kinds!.acquire!(permitRequest('sem:record', 3), Date.now() + 2_000, new AbortController().signal);
      await b.close();
      expect(await recorded('sem:record')).toBe(3);
      const other = await a.kinds!.tryAcquire(permitRequest('sem:record', 5));
      expect(other.acquired).toBe(true);
      expect(await recorded('sem:record')).toBe(5);
      await expect(a.kinds!.tryAcquire(permitRequest('sem:record', 4))).rejects.toBeInstanceOf(InvalidArgumentError);
      if (other.acquired) await a.kinds!.release(other.grant);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('postgres:advisory semaphore size', () => {
  const permitRequest = (key: string, permits: number): AcquireRequest => ({ ...request(key), kind: { type: 'permit', permits } });

  it('a refused size leaves the gate before the error: the next tryAcquire, at once, finds a permit (20 rounds)', async () => {
    const [a, b] = [backend(), backend()];
    try {
      for (let round = 0; round < 20; round += 1) {
        const key = `sem:refused:${round}`;
        const held = await a.kinds!.tryAcquire(permitRequest(key, 3));
        await expect(b.kinds!.tryAcquire(permitRequest(key, 2))).rejects.toBeInstanceOf(InvalidArgumentError);
        // A refused session only ended, not unlocked, held the gate until its server process exited: 14 of 40 found it busy.
        const next = await a.kinds!.tryAcquire(permitRequest(key, 3));
        expect(next.acquired, `round ${round}: the gate was still busy after the refusal`).toBe(true);
        for (const attempt of [held, next]) if (attempt.acquired) await a.kinds!.release(attempt.grant);
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a semaphore of 1e9 permits costs what one of 3 does: acquire, a second holder, release and the size check compute no id per slot', async () => {
    const [a, b] = [backend(), backend()];
    const permits = 1e9;
    try {
      const heapBefore = process.memoryUsage().heapUsed;
      const started = performance.now();
      const first = await a.kinds!.acquire!(permitRequest('sem:huge', permits), Date.now() + 5_000, new AbortController().signal);
      const second = await b.kinds!.tryAcquire(permitRequest('sem:huge', permits));
      // Another size while both hold: refused (the check that the semaphore is in use).
      await expect(b.kinds!.tryAcquire(permitRequest('sem:huge', permits - 1))).rejects.toBeInstanceOf(InvalidArgumentError);
      expect(first).toBeDefined();
      expect(second.acquired).toBe(true);
      expect(await a.kinds!.release(first!)).toBe(true);
      if (second.acquired) expect(await b.kinds!.release(second.grant)).toBe(true);
      // The last release cleared the record: a new size is taken at once.
      const resized = await a.kinds!.tryAcquire(permitRequest('sem:huge', 2));
      expect(resized.acquired).toBe(true);
      if (resized.acquired) await a.kinds!.release(resized.grant);
      const elapsedMs = performance.now() - started;
      const grownMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
      console.info(
        `[huge semaphore] ${permits} permits: 2 acquires, a refusal, 2 releases and a resize in ${elapsedMs.toFixed(0)} ms, heap +${grownMb.toFixed(1)} MB`,
      );
      // An id per slot was 2.7 s and 160 MB at 1e6 permits; at 1e9 the heap ran out.
      expect(grownMb).toBeLessThan(64);
      expect(elapsedMs).toBeLessThan(10_000);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 120_000);
});
