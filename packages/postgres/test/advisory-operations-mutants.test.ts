// Advisory inspect reads pg_locks: each one-line mutant of the real statement, on a real server,
// must fail an operations case. A harness that cannot apply its mutant fails loudly.
import { type ConformanceCase, opsInspectHolder, opsInspectPermits, opsInspectReaders, runCase } from '@deadbolt/conformance';
import { type PostgresServerHandle, startPostgres } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advisoryCapabilities, createPostgresBackend, type PostgresBackend } from '../src/index.js';

let server: PostgresServerHandle;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

/** Runs `testCase` with `from` replaced by `to` in the advisory inspect statement; the case's error, if any. */
function mutant(testCase: ConformanceCase, from: string, to: string): Promise<unknown> {
  return runCase(testCase, {
    name: 'postgres:advisory operations mutant',
    capabilities: advisoryCapabilities,
    permitsRecorded: true,
    create: (_server, { prefix }) => {
      const backend = createPostgresBackend(`${server.url}?mode=advisory`) as PostgresBackend;
      const operations = (backend as unknown as { mode?: { operations?: { statement?: string } } }).mode?.operations;
      if (operations?.statement?.includes(from) !== true) throw new Error(`mutant: "${from}" not found in the inspect statement`);
      operations.statement = operations.statement.replace(from, to);
      return createLockClient({ backend, prefix });
    },
  }).then(
    () => undefined,
    (error: unknown) => error,
  );
}

function expectCaught(what: string, error: unknown): void {
  console.info(`[mutant] ${what}: ${String(error)}`);
  expect(error).toBeInstanceOf(Error);
  expect(String(error)).not.toMatch(/^Error: mutant:/);
}

describe('the operations cases catch a broken advisory inspect', () => {
  it('the int4-pair form read instead of the bigint form fails opsInspectHolder', async () => {
    expectCaught('objsubid 2', await mutant(opsInspectHolder, 'l.objsubid = 1', 'l.objsubid = 2'));
  });

  it('every lock read as exclusive fails opsInspectReaders', async () => {
    expectCaught('mode ignored', await mutant(opsInspectReaders, 'l.mode,', "'ExclusiveLock' AS mode,"));
  });

  it("only the key's own id read (no in-use lock) fails opsInspectPermits", async () => {
    expectCaught('in-use id unread', await mutant(opsInspectPermits, '= ANY($1::bigint[])', '= ($1::bigint[])[1]'));
  });
});
