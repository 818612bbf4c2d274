import type { ServerHandle } from '@deadbolt/conformance/servers';
import { fencedStoreFor } from '../data-servers.js';
import { runWorkload, type RunSpec } from '../run.js';
import { forEachRow, row, servers, sleep, type Scenario } from '../scenario-kit.js';

const rows = [{ backend: 'etcd', mode: 'concurrency-mutex', pkg: '@deadbolt/etcd' }] as const;

interface MemberStatus {
  readonly header?: { readonly member_id?: string };
  readonly leader?: string;
}

/** A member's maintenance status over etcd's JSON gateway (what `etcdctl endpoint status` reads). */
async function status(member: ServerHandle): Promise<MemberStatus | undefined> {
  try {
    const answer = await fetch(`http://${member.host}:${member.port}/v3/maintenance/status`, {
      method: 'POST',
      body: '{}',
      signal: AbortSignal.timeout(1_000),
    });
    return answer.ok ? ((await answer.json()) as MemberStatus) : undefined;
  } catch {
    return undefined;
  }
}

/** The member that is raft leader, as the members that answer report it; polled until `timeoutMs`. */
async function leaderOf(members: readonly ServerHandle[], timeoutMs: number): Promise<ServerHandle> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const statuses = await Promise.all(members.map(status));
    const leaderId = statuses.find((s) => s?.leader !== undefined && s.leader !== '0')?.leader;
    const index = statuses.findIndex((s) => s?.header?.member_id === leaderId);
    const leader = leaderId === undefined ? undefined : members[index];
    if (leader !== undefined) return leader;
    if (Date.now() > deadline) throw new Error(`no etcd leader among ${members.length} members within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** Stop the raft leader of a 3-member etcd cluster mid-run; bring it back after the new election. */
export const etcdLeaderLoss: Scenario = {
  name: 'etcd-leader-loss',
  description:
    'The raft leader of a 3-member etcd cluster is stopped mid-run. The other two elect a new leader and keep every lease; until they have, nobody can take the lock (a CP system gives up availability, never exclusion).',
  rows: rows.map((r) => `${r.backend}/${r.mode}`),
  run: (opts) =>
    forEachRow('etcd-leader-loss', rows, opts, async () => {
      const s = await servers();
      const cluster = await s.startEtcdCluster(3);
      try {
        const spec: RunSpec = {
          url: `${cluster.url}?sessionTtlMs=4000`,
          clients: 3,
          childClients: 1,
          durationMs: opts.quick ? 10_000 : 12_000,
          ttlMs: 4000,
          holdMs: 100,
          fencedStore: fencedStoreFor('etcd'),
        };
        const history = await runWorkload(spec, async (ctx) => {
          await sleep(2000);
          const leader = await leaderOf(cluster.members, 10_000);
          const survivors = cluster.members.filter((member) => member !== leader);
          await ctx.fault('leader member stopped, until a new one is elected', async () => {
            await leader.down();
            await leaderOf(survivors, 30_000).catch(() => undefined);
          });
          await leader.up().catch(() => undefined);
        });
        return row(
          'etcd',
          'concurrency-mutex',
          'etcd-leader-loss',
          history,
          '0 overlaps; a short window with no holder during the election',
          (c) => c.overlaps === 0,
        );
      } finally {
        await cluster.stop();
      }
    }),
};
