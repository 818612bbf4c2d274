import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import { createPostgresBackend, type PostgresBackend } from '../src/index.js';
import { env } from './pg-env.js';

/** Granted advisory locks on the server, every session's. */
const advisoryLocks = async (): Promise<number> =>
  (await env.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted`)).rows[0]!.n;

const keysOf = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}:${i}`);

/** Advisory acquireAll with large sets: a cost that grows with the set, not with its square. */
export function advisoryMultiScaleCases(): void {
  describe('postgres:advisory acquireAll of large sets', () => {
    it('10,000 free keys are taken within the default statement timeout, and a wait for them when one is busy is granted on its release', async () => {
      // The default statementTimeoutMs (2000): the try statement stepped through the set with a join
      // over the whole list per key, quadratic, and ran past it at 10,000 keys.
      const [a, b] = [createPostgresBackend(`${env.server.url}?mode=advisory`), createPostgresBackend(`${env.server.url}?mode=advisory`)];
      const [first, second] = [createLockClient({ backend: a }), createLockClient({ backend: b })];
      const keys = keysOf('scale', 10_000);
      try {
        const before = await advisoryLocks();
        let started = performance.now();
        const all = await first.acquireAll(keys, { waitMs: 5_000 });
        console.info(`[scale] acquireAll of ${keys.length} free keys: ${(performance.now() - started).toFixed(0)} ms`);
        expect(await advisoryLocks()).toBe(before + keys.length);
        expect(await second.tryAcquire(keys[keys.length - 1]!)).toBeNull();
        await all.release();
        expect(await advisoryLocks()).toBe(before);

        // One key busy: the set waits in the server's queues (the blocking statement) until its release.
        const busy = await second.acquire(keys[4_321]!);
        const waiting = first.acquireAll(keys, { waitMs: 30_000 });
        await expect
          .poll(async () => (await env.admin.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rowCount, {
            timeout: 10_000,
          })
          .toBe(1);
        started = performance.now();
        await busy.release();
        const waited = await waiting;
        console.info(
          `[scale] the waiting set of ${keys.length} keys was granted ${(performance.now() - started).toFixed(0)} ms after the release`,
        );
        expect(await advisoryLocks()).toBe(before + keys.length);
        await waited.release();
        expect(await advisoryLocks()).toBe(before);
      } finally {
        await Promise.all([first.close(), second.close()]);
      }
    }, 60_000);

    it("a set larger than the server's shared lock table is refused with a typed error naming that limit, and nothing of it is kept", async () => {
      // The fixture's table: max_locks_per_transaction 64 x (200 connections + background slots), about
      // 14,000 entries plus spare shared memory; 100,000 locks do not fit.
      const settings = await env.admin.query<{ locks: number; connections: number }>(
        `SELECT current_setting('max_locks_per_transaction')::int AS locks, current_setting('max_connections')::int AS connections`,
      );
      const { locks, connections } = settings.rows[0]!;
      const n = 100_000;
      expect(locks * (connections + 50), 'the case needs a set the server lock table cannot hold').toBeLessThan(n / 4);
      const backend = createPostgresBackend(`${env.server.url}?mode=advisory`) as PostgresBackend;
      const client = createLockClient({ backend });
      const keys = keysOf('huge', n);
      try {
        const before = await advisoryLocks();
        for (const waitMs of [0, 5_000]) {
          const error = await client.acquireAll(keys, { waitMs }).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error).toBeInstanceOf(InvalidArgumentError);
          expect(String(error)).toContain('max_locks_per_transaction');
          expect(String(error).length, 'the error names a few keys, not all of them').toBeLessThan(1_000);
          await expect.poll(advisoryLocks, { timeout: 5_000 }).toBe(before);
        }
        // The same limit met by the blocking statement: a key early in the order is busy, so the try
        // is refused before the table fills; the wait takes the keys before it, queues, and on the
        // release goes on until the table is full.
        const other = createLockClient({ backend: createPostgresBackend(`${env.server.url}?mode=advisory`) });
        try {
          const busy = await other.acquire(backend.multi!.orderKeys!(keys)[1_000]!);
          const waiting = client.acquireAll(keys, { waitMs: 30_000 }).then(
            () => undefined,
            (e: unknown) => e,
          );
          await expect
            .poll(async () => (await env.admin.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rowCount, {
              timeout: 10_000,
            })
            .toBe(1);
          await busy.release();
          const error = await waiting;
          expect(error).toBeInstanceOf(InvalidArgumentError);
          expect(String(error)).toContain('max_locks_per_transaction');
          await expect.poll(advisoryLocks, { timeout: 5_000 }).toBe(before);
        } finally {
          await other.close();
        }
        // And the client works on: a set that fits is taken.
        const fits = await client.acquireAll(keys.slice(0, 100));
        await fits.release();
      } finally {
        await client.close();
      }
    }, 60_000);
  });
}
