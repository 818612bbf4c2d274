// Fences and terms grow across a restart of a Redis without persistence, which comes back with no
// fencing counter: every mode that fences seeds a new counter from the server's clock.
import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../src/index.js';
import {
  type FenceClients,
  fencesAcrossRestart,
  type TakeFence,
  takeAll,
  takeMutex,
  takePermit,
  takeRead,
  takeTerm,
} from './fence-restart.js';

function byUrl(mode: string): FenceClients {
  return { open: (server) => createLockClient(`${server.url}?mode=${mode}`), closeAll: async () => undefined };
}

const cases: [string, string, TakeFence][] = [
  ['setnx mutex', 'setnx', takeMutex],
  ['setnx acquireAll', 'setnx', takeAll],
  ['setnx election term', 'setnx', takeTerm],
  ['hash-reentrant mutex', 'hash-reentrant', takeMutex],
  ['fair mutex', 'fair', takeMutex],
  ['fair semaphore permit', 'fair', takePermit],
  ['fair read lock', 'fair', takeRead],
  ['fair election term', 'fair', takeTerm],
];

describe('fences grow across a restart of a Redis without persistence', () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const [what, mode, take] of cases) {
    it(what, async () => {
      const { before, after } = await fencesAcrossRestart(server, byUrl(mode), take, `restart:${what}`);
      console.info(`[fence-restart] ${what}: ${before} before the restart, ${after} after`);
      expect(after).toBeGreaterThan(before);
      expect(Number.isSafeInteger(after)).toBe(true);
    }, 30_000);
  }
});
