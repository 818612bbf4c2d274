import { runWorkload, type RunSpec } from '../run.js';
import { requireAdapter, row, servers, sleep, type Scenario, type ScenarioResult } from '../scenario-kit.js';

/** Restart PostgreSQL mid-run: advisory holders lose their sessions (and are told); lease rows survive. */
export const postgresRestart: Scenario = {
  name: 'postgres-restart',
  quick: false,
  async run({ quick, onRow }) {
    await requireAdapter('@deadbolt/postgres');
    const s = await servers();
    const server = await s.startPostgres();
    const out: ScenarioResult[] = [];
    try {
      for (const mode of ['advisory', 'lease'] as const) {
        const spec: RunSpec = { url: `${server.url}?mode=${mode}`, clients: 3, childClients: 0, durationMs: quick ? 5000 : 8000, ttlMs: 3000, holdMs: 300 };
        const history = await runWorkload(spec, async (ctx) => {
          await sleep(1500);
          await ctx.fault('postgres restart', () => server.restart());
        });
        const r = row('postgres', mode, 'postgres-restart', history,
          mode === 'advisory' ? 'holders told they lost the lock; 0 overlaps when they obey' : '0 overlaps',
          (c) => c.violations === 0);
        out.push(r); onRow?.(r);
      }
    } finally { await server.stop(); }
    return out;
  },
};
