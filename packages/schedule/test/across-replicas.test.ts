import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReplicas } from './replicas.js';

// Three processes, each with its own LockClient on one real Redis, schedule the same job every
// second; over four ticks each tick must run exactly once: no duplicate, none missing.
const ticks = 4;
let server: ServerHandle;

beforeAll(async () => {
  server = await startRedis();
});
afterAll(() => server?.stop());

describe.each(['node-cron', 'cron', 'croner', 'nestjs'])('%s: three replicas, one schedule', (integration) => {
  it(`runs each of ${ticks} ticks exactly once, and lastRun records the runs`, { timeout: 30_000 }, async () => {
    const run = await runReplicas(integration, server.url, ticks);
    expect([...run.runs].sort()).toEqual(run.window);
    for (const [tick, outcomes] of run.reports) {
      expect({ tick, ran: outcomes.filter((outcome) => outcome === 'ran').length }).toEqual({ tick, ran: 1 });
    }
    const locks = createLockClient({ url: server.url });
    try {
      const last = await locks.lastRun(run.name);
      expect(last?.outcome).toBe('ok');
      expect(last?.finishedAt?.getTime()).toBeGreaterThanOrEqual(Date.parse(run.window.at(-1) ?? ''));
    } finally {
      await locks.close();
    }
  });
});

describe('the check itself', () => {
  it('sees duplicates when the replicas schedule the job with no lock', { timeout: 30_000 }, async () => {
    const run = await runReplicas('unguarded', server.url, ticks);
    expect(run.runs.length).toBeGreaterThan(run.window.length);
    expect([...new Set(run.runs)].sort()).toEqual(run.window);
  });
});
