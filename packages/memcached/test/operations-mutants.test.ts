// The operator API on memcached (inspect, forceRelease): each method broken one way, on a real
// server, must fail a conformance case. A harness that cannot apply its mutant fails loudly.
import { type ConformanceCase, opsForceRelease, opsInspectHolder, opsInspectPermits, runCase } from '@deadbolt/conformance';
import { startMemcached, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemcachedBackend, memcachedCapabilities } from '../src/index.js';
import type { MemcachedOperations } from '../src/operations.js';

let server: ServerHandle;
beforeAll(async () => {
  server = await startMemcached();
});
afterAll(async () => {
  await server?.stop();
});

/** Runs `testCase` on a backend whose operations driver `breakIt` changed; the case's error, if any. */
async function mutant(testCase: ConformanceCase, breakIt: (operations: MemcachedOperations) => void): Promise<unknown> {
  return runCase(testCase, {
    name: 'memcached operations mutant',
    capabilities: memcachedCapabilities,
    permitsRecorded: true,
    create: (_server, { prefix }) => {
      const backend = createMemcachedBackend(server.url);
      breakIt(backend.operations);
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
  expect(error).not.toBeInstanceOf(TypeError);
}

describe('the operations cases catch a broken memcached operations driver', () => {
  it('inspect that reads only the mutex item (no slots) fails opsInspectPermits', async () => {
    const error = await mutant(opsInspectPermits, (operations) => {
      const inspect = operations.inspect.bind(operations);
      operations.inspect = async (key) => {
        const seen = await inspect(key);
        return { holders: seen.holders.filter((hold) => hold.kind === 'mutex') };
      };
    });
    expectCaught('inspect without the slots', error);
  });

  it('inspect without ttlLeftMs (the flags not read) fails opsInspectHolder', async () => {
    const error = await mutant(opsInspectHolder, (operations) => {
      const inspect = operations.inspect.bind(operations);
      operations.inspect = async (key) => {
        const seen = await inspect(key);
        return { holders: seen.holders.map(({ ttlLeftMs: _dropped, ...hold }) => hold) };
      };
    });
    expectCaught('inspect without ttlLeftMs', error);
  });

  it('forceRelease that deletes nothing fails opsForceRelease', async () => {
    const error = await mutant(opsForceRelease, (operations) => {
      operations.forceRelease = async () => true;
    });
    expectCaught('forceRelease without the delete', error);
  });

  it('forceRelease without the marker (forcedBy finds nobody) fails opsForceRelease', async () => {
    const error = await mutant(opsForceRelease, (operations) => {
      operations.forcedBy = async () => undefined;
    });
    expectCaught('forceRelease without the marker', error);
  });
});
