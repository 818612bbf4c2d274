import { fencedStoreFor } from '../data-servers.js';
import { runWorkload, type RunSpec } from '../run.js';
import { forEachRow, row, servers, sleep, type Scenario } from '../scenario-kit.js';

const rows = [
  { backend: 'redis', mode: 'getset', pkg: '@deadbolt/redis' },
  { backend: 'redis', mode: 'setnx', pkg: '@deadbolt/redis' },
  { backend: 'redis', mode: 'fair', pkg: '@deadbolt/redis' },
] as const;

/** One client's clock ahead by more than the ttl: getset trusts it and steals a live lock; setnx uses server TTLs. */
export const getsetClockSkew: Scenario = {
  name: 'getset-clock-skew',
  description:
    "One client's clock runs 3 s ahead for the whole run (an unsynchronised host). The legacy getset mode decides expiry from client clocks, so that client thinks every lock has expired and takes it; setnx and fair let the server's own timer decide.",
  rows: rows.map((r) => `${r.backend}/${r.mode}`),
  async run(opts) {
    // Started on the first row that runs (none may: --only), shared by the others.
    let started: ReturnType<Awaited<ReturnType<typeof servers>>['startRedis']> | undefined;
    try {
      return await forEachRow('getset-clock-skew', rows, opts, async ({ mode }) => {
        started ??= servers().then((s) => s.startRedis());
        const server = await started;
        const ttlMs = 1000;
        const spec: RunSpec = {
          url: `${server.url}?mode=${mode}`,
          clients: 3,
          childClients: 0,
          durationMs: opts.quick ? 3000 : 4000,
          ttlMs,
          holdMs: 200,
          fencedStore: fencedStoreFor('redis'),
          // Only getset reads the injected clock; setnx and fair ignore it (the server's TTL decides).
          perClient: (i) => (i === 0 ? { clockSkewMs: ttlMs * 3 } : {}),
        };
        const history = await runWorkload(spec, async (ctx) => {
          await ctx.fault('c0 clock 3 s ahead', () => sleep(spec.durationMs));
        });
        return row(
          'redis',
          mode,
          'getset-clock-skew',
          history,
          mode === 'getset' ? 'overlaps (client clocks decide expiry)' : "0 overlaps (the server's TTL decides expiry)",
          (c) => (mode === 'getset' ? c.overlaps > 0 : c.overlaps === 0),
        );
      });
    } finally {
      if (started) await (await started).stop();
    }
  },
};
