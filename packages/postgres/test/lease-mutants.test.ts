// Broken lease queues, each a one-line change to the real grant SQL (wherever that line is) on a real server: the fair group
// of the conformance suite must catch every one (as packages/redis/test/fair-mutants.test.ts does for
// the Redis fair scripts). Each mutant runs in its own table, so its functions never replace the
// real ones (function names follow the table).
import { allPermitsAtOnce, type ConformanceCase, fifoOrder, killedWaiterAtHead, readersShare, runCase } from '@deadbolt/conformance';
import { type PostgresServerHandle, startPostgres } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresBackend, leaseCapabilities, type PostgresBackend } from '../src/index.js';

let server: PostgresServerHandle;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const waiterLeaseMs = 3_000;

/** Runs `testCase` on lease backends whose schema statements had `from` replaced by `to`; the case's error, if any. */
function mutantCase(testCase: ConformanceCase, table: string, from: string, to: string): Promise<unknown> {
  const backends = new WeakMap<LockClient, PostgresBackend>();
  const backendOf = (client: LockClient): PostgresBackend => backends.get(client)!;
  return runCase(testCase, {
    name: `postgres:lease mutant (${table})`,
    capabilities: leaseCapabilities,
    create: (_server, { prefix }) => {
      const backend = createPostgresBackend(`${server.url}?mode=lease&table=${table}&waiterLeaseMs=${waiterLeaseMs}`) as PostgresBackend;
      // The statements the backend will create its functions with (the array it registered).
      const { mode } = backend as unknown as { mode: { sql: { schema: string[] }; kindsSql: { schema: string[] } } };
      // Every statement with it: the grant is in the grant function and, inline, in the release (v2).
      let found = 0;
      for (const schema of [mode.sql.schema, mode.kindsSql.schema]) {
        for (const [index, statement] of schema.entries()) {
          if (!statement.includes(from)) continue;
          schema[index] = statement.replace(from, to);
          found += 1;
        }
      }
      if (found === 0) throw new Error(`mutant: "${from}" not found in the lease schema`);
      const client = createLockClient({ backend, prefix });
      backends.set(client, backend);
      return client;
    },
    kill: (client) => backendOf(client).simulateCrash(),
    fair: {
      waiterLeaseMs,
      recheckBoundMs: waiterLeaseMs / 3,
      loseGrantMessages: (client) => backendOf(client).simulateLostGrantMessages(),
    },
  }).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('the fair and readWrite groups catch broken lease-queue SQL', () => {
  it('a grant to the newest waiter (LIFO) fails "granted in the order they queued"', async () => {
    const error = await mutantCase(
      fifoOrder,
      'mutant_lifo',
      'WHERE key = k ORDER BY seq LIMIT 1',
      'WHERE key = k ORDER BY seq DESC LIMIT 1',
    );
    console.info(`[mutant] LIFO grant: ${String(error)}`);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).not.toMatch(/^Error: mutant:/);
  });

  it('a grant that claims the waiter ttl, not its remaining waiter lease, fails "a killed head delays the next owner by at most its waiter lease"', async () => {
    const error = await mutantCase(
      killedWaiterAtHead,
      'mutant_claim',
      // (inside the quoted function body of a DO block: quotes are doubled)
      "least(clock_timestamp() + w.ttl_ms * interval ''1 millisecond'', w.deadline)",
      "clock_timestamp() + w.ttl_ms * interval ''1 millisecond''",
    );
    console.info(`[mutant] full-ttl claim: ${String(error)}`);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).not.toMatch(/^Error: mutant:/);
  });

  it('a reader that ignores a held write lock fails "readers share; a writer then excludes readers"', async () => {
    const error = await mutantCase(readersShare, 'mutant_rw', "AND h.kind = ''write'' AND", "AND h.kind = ''none'' AND");
    console.info(`[mutant] reader past a writer: ${String(error)}`);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).not.toMatch(/^Error: mutant:/);
  });

  it('a permit past the semaphore size fails "all permits held, one more is refused"', async () => {
    const error = await mutantCase(allPermitsAtOnce, 'mutant_sem', ') < permits;', ') <= permits;');
    console.info(`[mutant] one permit too many: ${String(error)}`);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).not.toMatch(/^Error: mutant:/);
  });
});
