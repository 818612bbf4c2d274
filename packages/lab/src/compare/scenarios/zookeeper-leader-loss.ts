import { fencedStoreFor } from '../data-servers.js';
import { runWorkload, type RunSpec } from '../run.js';
import { forEachRow, row, servers, sleep, type Scenario } from '../scenario-kit.js';

const rows = [{ backend: 'zookeeper', mode: 'ephemeral-sequential', pkg: '@deadbolt/zookeeper' }] as const;

/** Stop the leader of a 3-node ensemble mid-run; bring it back after the new election. */
export const zookeeperLeaderLoss: Scenario = {
  name: 'zookeeper-leader-loss',
  description:
    'The leader of a 3-node ZooKeeper ensemble is stopped mid-run. The other two elect a new leader; until they have, nobody can take the lock (a CP system gives up availability, never exclusion).',
  rows: rows.map((r) => `${r.backend}/${r.mode}`),
  run: (opts) =>
    forEachRow('zookeeper-leader-loss', rows, opts, async () => {
      const s = await servers();
      const ensemble = await s.startZooKeeperEnsemble(3);
      try {
        const spec: RunSpec = {
          url: ensemble.url,
          clients: 3,
          childClients: 1,
          durationMs: opts.quick ? 10_000 : 12_000,
          ttlMs: 4000,
          holdMs: 100,
          fencedStore: fencedStoreFor('zookeeper'),
        };
        const history = await runWorkload(spec, async (ctx) => {
          await sleep(2000);
          const leader = await ensemble.leader();
          await ctx.fault('leader stopped, until a new one is elected', async () => {
            await leader.down();
            await ensemble.leader({ timeoutMs: 30_000 }).catch(() => undefined);
          });
          await leader.up().catch(() => undefined);
        });
        return row(
          'zookeeper',
          'ephemeral-sequential',
          'zookeeper-leader-loss',
          history,
          '0 overlaps; a window with no holder during the election',
          (c) => c.overlaps === 0,
        );
      } finally {
        await ensemble.stop();
      }
    }),
};
