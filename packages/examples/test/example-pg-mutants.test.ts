// The example adapter broken one statement at a time, on a real server: each mutant must fail the
// shared cases that guard what it broke. Only those cases run. Each mutant has a table of its own.
import { mutualExclusion, nonOwnerRelease, runCase, staleHandleSameOwner, type ConformanceCase } from '@deadbolt/conformance';
import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ExamplePgBackend,
  examplePgCapabilities,
  examplePgStatements,
  resolveExamplePgOptions,
  type ExamplePgStatements,
} from '../src/example-pg/index.js';
import { examplePgUrl } from './example-pg-hooks.js';

let server: PostgresServerHandle;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

interface Mutation {
  readonly table: string;
  readonly statement: keyof ExamplePgStatements;
  readonly from: string;
  readonly to: string;
}

/** Runs `testCase` on backends whose `statement` has `from` replaced by `to`; the case's error, if any. */
function mutantCase(testCase: ConformanceCase, { table, statement, from, to }: Mutation): Promise<unknown> {
  const statements = examplePgStatements(table);
  if (!statements[statement].includes(from)) throw new Error(`mutant: "${from}" is not in the ${statement} statement`);
  const mutated: ExamplePgStatements = { ...statements, [statement]: statements[statement].replace(from, to) };
  const options = resolveExamplePgOptions(examplePgUrl(server), { table });
  return runCase(testCase, {
    name: `example-pg mutant (${table})`,
    capabilities: examplePgCapabilities,
    create: (_server, { prefix }) => createLockClient({ backend: new ExamplePgBackend(options, mutated), prefix }),
  }).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('the shared suite catches a broken example-pg adapter', () => {
  it('a release that ignores the token fails both non-owner release cases', async () => {
    const mutation: Mutation = {
      table: 'mutant_release_any',
      statement: 'release',
      // `$2` stays a parameter (pg refuses an unused one), but nothing compares it any more.
      from: 'AND token = $2',
      to: 'AND $2::text IS NOT NULL',
    };
    const nextHolder = await mutantCase(nonOwnerRelease, mutation);
    console.info(`[mutant] release by key only, "${nonOwnerRelease.title}": ${String(nextHolder)}`);
    expect(String(nextHolder)).toMatch(/the old handle.s release deleted the new holder.s lock/);
    const sameOwner = await mutantCase(staleHandleSameOwner, mutation);
    console.info(`[mutant] release by key only, "${staleHandleSameOwner.title}": ${String(sameOwner)}`);
    expect(String(sameOwner)).toMatch(/releasing the expired handle freed the same owner.s newer hold/);
  });

  it('an acquire that takes over a live row fails mutual exclusion', async () => {
    const error = await mutantCase(mutualExclusion, {
      table: 'mutant_acquire_live',
      statement: 'acquire',
      from: 'WHERE held.expires_at <= clock_timestamp()',
      to: 'WHERE true',
    });
    console.info(`[mutant] acquire over a live row, "${mutualExclusion.title}": ${String(error)}`);
    expect(String(error)).toMatch(/overlapping critical sections/);
  });
});
