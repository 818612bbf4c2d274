import { runWorkload, type RunSpec } from '../run.js';
import { requireAdapter, row, servers, sleep, type Scenario, type ScenarioResult } from '../scenario-kit.js';

/** One client's clock ahead by more than the ttl: getset trusts it and steals a live lock; setnx uses server TTLs. */
export const getsetClockSkew: Scenario = {
  name: 'getset-clock-skew',
  quick: false,
  async run({ quick, onRow }) {
    await requireAdapter('@deadbolt/redis');
    const s = await servers();
    const server = await s.startRedis();
    const out: ScenarioResult[] = [];
    try {
      for (const mode of ['getset', 'setnx'] as const) {
        const ttlMs = 1000;
        const spec: RunSpec = {
          url: `${server.url}?mode=${mode}`, clients: 3, childClients: 0, durationMs: quick ? 3000 : 5000, ttlMs, holdMs: 200,
          // Only getset reads the injected clock; setnx ignores it (the server's TTL decides).
          perClient: (i) => (i === 0 ? { clockSkewMs: ttlMs * 3 } : {}),
        };
        const history = await runWorkload(spec, async (ctx) => { await ctx.fault('c0 clock +3s', () => sleep(spec.durationMs)); });
        const r = row('redis', mode, 'getset-clock-skew', history,
          mode === 'getset' ? 'overlaps (client clocks decide expiry)' : 'no overlaps (server-side TTL)',
          (c) => (mode === 'getset' ? c.violations > 0 : c.violations === 0));
        out.push(r); onRow?.(r);
      }
    } finally { await server.stop(); }
    return out;
  },
};
