// A semaphore's permits are recorded on PostgreSQL in both modes (issue 16): the suite's
// "other permits refused" case must fail when the record is written but not honoured. One-line
// mutants of the real statements, on a real server; each lease mutant in its own table (function
// names follow the table, so the real functions are never replaced).
import { type ConformanceCase, permitsMismatchRefused, runCase } from '@deadbolt/conformance';
import { type PostgresServerHandle, startPostgres } from '@deadbolt/conformance/servers';
import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advisoryCapabilities, createPostgresBackend, leaseCapabilities, type PostgresBackend } from '../src/index.js';
import type { AdvisoryPermitsSql } from '../src/modes/advisory/permits.js';

let server: PostgresServerHandle;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

/** The case's error, if any; a harness that cannot apply its mutant fails loudly instead. */
function outcome(run: Promise<void>): Promise<unknown> {
  return run.then(
    () => undefined,
    (error: unknown) => error,
  );
}

function expectCaught(error: unknown): void {
  expect(error).toBeInstanceOf(Error);
  expect(String(error)).not.toMatch(/^Error: mutant:/);
  expect(error).not.toBeInstanceOf(TypeError);
  expect(error).not.toBeInstanceOf(InvalidArgumentError); // the case's own assertion, not a leaked refusal
}

function leaseMutant(testCase: ConformanceCase, table: string, from: string, to: string): Promise<unknown> {
  return outcome(
    runCase(testCase, {
      name: `postgres:lease mutant (${table})`,
      capabilities: leaseCapabilities,
      permitsRecorded: true,
      create: (_server, { prefix }) => {
        const backend = createPostgresBackend(`${server.url}?mode=lease&table=${table}`) as PostgresBackend;
        const { mode } = backend as unknown as { mode: { kindsSql: { schema: string[] } } };
        const index = mode.kindsSql.schema.findIndex((statement) => statement.includes(from));
        if (index < 0) throw new Error(`mutant: "${from}" not found in the lease kinds schema`);
        mode.kindsSql.schema[index] = mode.kindsSql.schema[index]!.replace(from, to);
        return createLockClient({ backend, prefix });
      },
    }),
  );
}

function advisoryMutant(testCase: ConformanceCase, breakSql: (sql: AdvisoryPermitsSql) => AdvisoryPermitsSql): Promise<unknown> {
  return outcome(
    runCase(testCase, {
      name: 'postgres:advisory permits mutant',
      capabilities: advisoryCapabilities,
      permitsRecorded: true,
      create: (_server, { prefix }) => {
        const backend = createPostgresBackend(`${server.url}?mode=advisory`) as PostgresBackend;
        const kinds = (backend as unknown as { mode?: { kinds?: { permitsSql?: AdvisoryPermitsSql } } }).mode?.kinds;
        if (kinds?.permitsSql === undefined) throw new Error("mutant: the advisory mode's permits statements are not found");
        const broken = breakSql(kinds.permitsSql);
        if (JSON.stringify(broken) === JSON.stringify(kinds.permitsSql)) throw new Error('mutant: the statements did not change');
        kinds.permitsSql = broken;
        return createLockClient({ backend, prefix });
      },
    }),
  );
}

describe('the "other permits refused" case catches a semaphore size recorded but not honoured', () => {
  it('lease: a mismatch taken for a stale record (others holding ignored)', async () => {
    const error = await leaseMutant(
      permitsMismatchRefused,
      'mutant_permits',
      'IF recorded_permits IS NULL OR (NOT EXISTS',
      'IF recorded_permits IS NOT NULL OR (NOT EXISTS',
    );
    console.info(`[mutant] lease permits record overwritten while in use: ${String(error)}`);
    expectCaught(error);
  });

  it('advisory: a record replaced while its in-use lock is held', async () => {
    const error = await advisoryMutant(permitsMismatchRefused, (sql) => ({
      ...sql,
      replace: sql.replace.replace(/ AND NOT EXISTS[\s\S]*$/, ' AND $4::bigint IS NOT NULL'),
    }));
    console.info(`[mutant] advisory permits record replaced while in use: ${String(error)}`);
    expectCaught(error);
  });

  it('advisory: a permit that leaves the gate without taking the in-use lock', async () => {
    const error = await advisoryMutant(permitsMismatchRefused, (sql) => ({
      ...sql,
      leaveGate: sql.leaveGate.replace('pg_advisory_lock_shared($1::bigint)', '$1::bigint'),
    }));
    console.info(`[mutant] advisory permit held without its in-use lock: ${String(error)}`);
    expectCaught(error);
  });
});
