import { runWorkload, type RunSpec } from '../run.js';
import { requireAdapter, row, servers, sleep, type Scenario } from '../scenario-kit.js';

/** Stop the leader of a 3-node ensemble mid-run; bring it back after the new election. */
export const zookeeperLeaderLoss: Scenario = {
  name: 'zookeeper-leader-loss',
  quick: true,
  async run({ quick, onRow }) {
    await requireAdapter('@deadbolt/zookeeper');
    const s = await servers();
    const ensemble = await s.startZooKeeperEnsemble(3);
    try {
      const spec: RunSpec = { url: ensemble.url, clients: 3, childClients: 1, durationMs: quick ? 10_000 : 15_000, ttlMs: 4000, holdMs: 100 };
      const history = await runWorkload(spec, async (ctx) => {
        await sleep(2000);
        const leader = await ensemble.leader();
        await ctx.fault('leader down', async () => {
          await leader.down();
          await ensemble.leader({ timeoutMs: 30_000 }).catch(() => undefined);
        });
        await leader.up().catch(() => undefined);
      });
      const r = row('zookeeper', 'ephemeral-sequential', 'zookeeper-leader-loss', history,
        '0 overlaps; an unavailability window during the election', (c) => c.violations === 0);
      onRow?.(r);
      return [r];
    } finally { await ensemble.stop(); }
  },
};
