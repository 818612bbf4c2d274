import { multiAllOrNothing, multiExcludesSingle, runCase, type ConformanceCase } from '@deadbolt/conformance';
import { createLockClient } from '@deadbolt/core';
import type { AcquireRequest } from '@deadbolt/core/adapter';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { env } from './pg-env.js';
import { advisoryCapabilities, advisoryLockId, type PostgresBackend, createPostgresBackend } from '../src/index.js';
import { byAdvisoryId, multiSql } from '../src/modes/advisory/multi.js';

const backend = (): PostgresBackend => createPostgresBackend(`${env.server.url}?mode=advisory`) as PostgresBackend;
const request = (key: string): AcquireRequest => ({ key, owner: 'o', ttlMs: 1_000, onLost: () => undefined });
/** The keys in the order acquireAll takes them (core sorts with the multi driver's orderKeys). */
const requests = (b: PostgresBackend, keys: readonly string[]): AcquireRequest[] => b.multi!.orderKeys!(keys).map(request);

/** Granted advisory locks of these keys: key -> holder pid. */
async function holders(keys: readonly string[]): Promise<Map<string, number>> {
  const ids = keys.map((key) => advisoryLockId(key).toString());
  const { rows } = await env.admin.query<{ id: string; pid: number }>(
    `SELECT (classid::bigint << 32 | objid::bigint)::text AS id, pid FROM pg_locks
     WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND (classid::bigint << 32 | objid::bigint) = ANY($1::bigint[])`,
    [ids],
  );
  return new Map(rows.map((row) => [keys[ids.indexOf(row.id)]!, row.pid]));
}

/** Advisory acquireAll: pg_locks views of the one-statement paths, and SQL mutants the multi cases catch. */
export function advisoryMultiCases(): void {
  describe('postgres:advisory acquireAll', () => {
    it('orders keys by signed advisory id, the order the server takes them in', () => {
      const keys = ['acct:1', 'acct:2', 'acct:3', 'acct:4', 'acct:5'];
      const ordered = byAdvisoryId(keys, '');
      const ids = ordered.map((key) => advisoryLockId(key));
      expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      expect(new Set(ordered)).toEqual(new Set(keys));
    });

    it('takes the whole set on one session in one statement, a fence per key; a busy key refuses all and leaves nothing', async () => {
      const [a, b] = [backend(), backend()];
      const keys = ['set:a', 'set:b', 'set:c', 'set:d'];
      try {
        const taken = await a.multi!.tryAcquireMany!(requests(a, keys));
        expect(taken.acquired).toBe(true);
        if (!taken.acquired) return;
        const pids = await holders(keys);
        expect(pids.size).toBe(4);
        expect(new Set(pids.values()).size).toBe(1);
        expect(taken.grants.every((grant) => Number.isSafeInteger(grant.fence))).toBe(true);
        await Promise.all(taken.grants.map((grant) => a.release(grant)));
        expect((await holders(keys)).size).toBe(0);

        // The last key in id order is busy: the earlier ones, taken in the same statement, are given back.
        const last = a.multi!.orderKeys!(keys).at(-1)!;
        const busy = await a.tryAcquire(request(last));
        expect(busy.acquired).toBe(true);
        const refused = await b.multi!.tryAcquireMany!(requests(b, keys));
        expect(refused).toEqual({ acquired: false, busyKey: last });
        expect([...(await holders(keys)).keys()]).toEqual([last]);
        if (busy.acquired) await a.release(busy.grant);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('a blocking acquireMany waits in the server queue, is granted on release with larger fences, and a timeout leaves nothing', async () => {
      const [a, b] = [backend(), backend()];
      const keys = ['wait:a', 'wait:b', 'wait:c'];
      try {
        const first = await a.multi!.tryAcquireMany!(requests(a, keys));
        if (!first.acquired) throw new Error('not taken');
        const timedOut = await b.multi!.acquireMany!(requests(b, keys), Date.now() + 300, new AbortController().signal);
        expect(timedOut).toBeUndefined();
        expect(new Set((await holders(keys)).values()).size).toBe(1);

        let contended = 0;
        const waiting = b.multi!.acquireMany!(
          requests(b, keys).map((each) => ({ ...each, onContended: () => (contended += 1) })),
          Date.now() + 10_000,
          new AbortController().signal,
        );
        await expect.poll(() => contended, { timeout: 5_000 }).toBe(1);
        await Promise.all(first.grants.map((grant) => a.release(grant)));
        const second = await waiting;
        expect(second).toHaveLength(3);
        second!.forEach((grant, index) => expect(grant.fence!).toBeGreaterThan(first.grants[index]!.fence!));
        await Promise.all(second!.map((grant) => b.release(grant)));
        expect((await holders(keys)).size).toBe(0);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('a deadlock with a session outside the global order is broken by the server and the set is retried', async () => {
      const b = backend();
      const other = new pg.Client({ connectionString: env.server.url });
      await other.connect();
      const [first, second] = b.multi!.orderKeys!(['cycle:a', 'cycle:b']);
      const [firstId, secondId] = [first!, second!].map((key) => advisoryLockId(key).toString());
      try {
        // Another session takes the keys in the opposite order: the second, then (below) the first.
        // Its deadlock_timeout (10 s) outlasts ours (1 s), so the detector ends OUR wait (40P01). Our
        // detector looks once, 1 s into our wait: the cycle must close before then, so the other
        // session is ready beforehand and the wait is watched closely.
        await other.query("SET deadlock_timeout = '10s'");
        await other.query('SELECT pg_advisory_lock($1::bigint)', [secondId]);
        const started = Date.now();
        const waiting = b.multi!.acquireMany!(requests(b, ['cycle:a', 'cycle:b']), Date.now() + 15_000, new AbortController().signal);
        await expect
          .poll(async () => (await env.admin.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rowCount, {
            timeout: 5_000,
            interval: 5,
          })
          .toBe(1);
        // The set gives back the first key, the other session gets it, and our retry waits its turn.
        await other.query('SELECT pg_advisory_lock($1::bigint)', [firstId]);
        await other.query('SELECT pg_advisory_unlock_all()');
        const grants = await waiting;
        expect(grants).toHaveLength(2);
        expect(Date.now() - started).toBeGreaterThanOrEqual(900);
        await Promise.all(grants!.map((grant) => b.release(grant)));
      } finally {
        await other.end();
        await b.close();
      }
    });
  });

  /** The advisory mode's multi-lock behind the backend (the mode table builds it; tests reach in). */
  function multiOf(b: PostgresBackend): { sql: ReturnType<typeof multiSql> } {
    const multi = (b as unknown as { mode?: { multi?: { sql: ReturnType<typeof multiSql> } } }).mode?.multi;
    if (multi?.sql === undefined) throw new Error("the test cannot find the advisory mode's multi-lock statements");
    return multi;
  }

  /** The multi cases against an advisory backend whose acquireAll SQL was broken on purpose. */
  async function mutantCase(testCase: ConformanceCase, breakSql: (sql: ReturnType<typeof multiSql>) => ReturnType<typeof multiSql>) {
    const probe = backend();
    expect(multiOf(probe).sql.tryAll.text).toContain('pg_try_advisory_lock');
    await probe.close();
    const error = await runCase(testCase, {
      name: 'postgres:advisory mutant',
      capabilities: advisoryCapabilities,
      multiWaitMs: 2_000,
      create: (_server, { prefix }) => {
        const b = backend();
        const multi = multiOf(b);
        multi.sql = breakSql(multi.sql);
        return createLockClient({ backend: b, prefix });
      },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    // Caught by the case's own assertion, not by a broken test harness.
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(TypeError);
    return error;
  }

  describe('the multi cases catch broken advisory SQL', () => {
    it('failure paths that give nothing back (a try past a refused key, a timed-out wait) fail "all or nothing"', async () => {
      const error = await mutantCase(multiAllOrNothing, (sql) => ({
        ...sql,
        giveBack: 'SELECT 1',
        tryAll: {
          ...sql.tryAll,
          name: 'mutant_keeps',
          text: sql.tryAll.text.replace('pg_advisory_unlock(id)', 'id').replace(' AND t.ok', ''),
        },
      }));
      console.info(`[mutant] try that keeps its keys: ${String(error)}`);
    });

    it('a try that takes no lock fails "excludes single-key locks"', async () => {
      const error = await mutantCase(multiExcludesSingle, (sql) => ({
        ...sql,
        tryAll: {
          ...sql.tryAll,
          name: 'mutant_blind',
          text: sql.tryAll.text.replaceAll(/pg_try_advisory_lock\(([.a-z]+)\)/g, '$1 IS NOT NULL'),
        },
      }));
      console.info(`[mutant] try that takes nothing: ${String(error)}`);
    });
  });
}
