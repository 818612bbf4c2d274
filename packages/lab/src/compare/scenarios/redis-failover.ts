import { fencedStoreFor } from '../data-servers.js';
import type { RunContext, RunSpec } from '../run.js';
import { runWorkload } from '../run.js';
import { forEachRow, row, servers, sleep, type Scenario } from '../scenario-kit.js';
import { startProxy, type RedisPrimaryReplica, type TcpProxy } from '@deadbolt/conformance/servers';

/**
 * Failover of a primary whose replica had not yet received the lock (Redis replication is
 * asynchronous: the primary acknowledges a SET before any replica has it). Every client reaches
 * Redis through ONE proxy, standing for the virtual IP or Sentinel-discovered address a real
 * deployment moves to the new primary.
 *
 * On loopback replication is near instant, so the lag is modelled honestly instead of hoped for:
 * the replica is PAUSED (and its link dropped) before the workload starts, so no write reaches it. As c0 first holds the
 * lock, the primary is killed, the replica resumed and promoted (REPLICAOF NO ONE), and the proxy
 * pointed at it. The promoted replica never saw c0's key, so the next client to ask gets the lock
 * while c0 is still inside its critical section: an overlap, a property of the class (AP), not
 * of the client library.
 *
 * c0 holds a fixed lease (the harness does not renew: the workload names a ttl) and works for
 * holdMs, longer than the failover takes, so nothing tells it anything during its hold. With
 * auto-renewal it would learn at its next renewal (refused by the new primary): a shorter
 * overlap, not none.
 */
async function failOverDuringFirstHold(ctx: RunContext, pair: RedisPrimaryReplica, proxy: TcpProxy, lagNow: boolean): Promise<void> {
  await ctx.fault('primary killed, lagging replica promoted', async () => {
    // With replicas=1 c0 holds only once the replica has its grant: the lag starts after it.
    if (lagNow) await freezeReplication(pair);
    await pair.primary.down();
    await pair.replica.resume();
    await promoteWithin(pair, 10_000);
    proxy.retarget(pair.replica.host, pair.replica.port);
  });
}

/**
 * The replication lag, made explicit: from here on the replica receives nothing. Pausing it is not
 * enough on its own: the frozen process's kernel still accepts the replication stream into the
 * socket buffer, and the replica applies it (c0's grant included) the moment it is resumed. So the
 * primary also drops the link (CLIENT KILL TYPE replica), which the paused replica cannot re-open.
 */
async function freezeReplication(pair: RedisPrimaryReplica): Promise<void> {
  const { redisCommand } = await servers();
  await pair.replica.pause();
  const reply = await redisCommand(pair.primary.host, pair.primary.port, 'CLIENT KILL TYPE replica', 2000);
  if (reply !== ':1\r\n') throw new Error(`CLIENT KILL TYPE replica on the primary answered ${JSON.stringify(reply)}`);
}

/** A replica busy with its master link may answer late: retry the promotion until a deadline. */
async function promoteWithin(pair: RedisPrimaryReplica, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await pair.promote();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await sleep(100);
    }
  }
}

/**
 * Makes the replica follow its primary by IP address rather than by name. In containers it
 * follows the network alias `primary`; once that container is gone, every reconnection attempt
 * resolves the name with a blocking lookup that times out after seconds, and Redis answers nothing
 * meanwhile (5 s seen here), which would stall the promotion. The master link is the client that
 * CLIENT LIST flags M; a process-provider replica already follows 127.0.0.1 and is re-pointed at it.
 */
async function followPrimaryByAddress(pair: RedisPrimaryReplica, timeoutMs: number): Promise<void> {
  const { replica } = pair;
  const { redisCommand } = await servers();
  const clients = (await redisCommand(replica.host, replica.port, 'CLIENT LIST', 2000)) ?? '';
  const link = /addr=(\S+):(\d+) \S.* flags=M /.exec(clients.split('\n').find((l) => / flags=M /.test(l)) ?? '');
  if (!link) throw new Error(`no master link in the replica's CLIENT LIST: ${JSON.stringify(clients)}`);
  const reply = await redisCommand(replica.host, replica.port, `REPLICAOF ${link[1]} ${link[2]}`, 2000);
  // Redis answers the second form when the replica already follows that host and port (always so
  // for a process replica, started with --replicaof 127.0.0.1 <port>): nothing to change then.
  if (reply !== '+OK\r\n' && reply !== '+OK Already connected to specified master\r\n')
    throw new Error(`REPLICAOF ${link[1]} ${link[2]} answered ${JSON.stringify(reply)}`);
  const deadline = Date.now() + timeoutMs;
  const synced = async (): Promise<boolean> => {
    const info = (await redisCommand(replica.host, replica.port, 'INFO replication', 1000)) ?? '';
    return info.includes(`master_host:${link[1]}`) && info.includes('master_link_status:up') && info.includes('master_sync_in_progress:0');
  };
  while (!(await synced())) {
    if (Date.now() >= deadline) throw new Error(`the replica did not resync with ${link[1]}:${link[2]} within ${timeoutMs} ms`);
    await sleep(50);
  }
}

const failoverOverlaps =
  'overlaps: the grant never reached the replica (paused: it stands for replication lag), so the promoted replica grants the lock again while c0 holds it';

const rows = [
  { backend: 'redis', mode: 'setnx', pkg: '@deadbolt/redis', query: 'mode=setnx', acknowledged: false },
  // The fair queue lives on the primary too: the promoted replica has neither the grant nor the queue.
  { backend: 'redis', mode: 'fair', pkg: '@deadbolt/redis', query: 'mode=fair', acknowledged: false },
  // Every grant and renewal waits (WAIT) for the one replica: a frozen replica would stop every
  // grant, so replication freezes right after c0's acknowledged grant, at the failover.
  {
    backend: 'redis',
    mode: 'setnx+replicas',
    pkg: '@deadbolt/redis',
    query: 'mode=setnx&replicas=1&replicaTimeoutMs=500',
    acknowledged: true,
  },
] as const;

export const redisFailover: Scenario = {
  name: 'redis-failover',
  description:
    'The Redis primary dies and its replica is promoted, but the replica had not yet received the latest grant (replication is asynchronous; the lag is made explicit by pausing the replica). The new primary has never heard of the lock and grants it again.',
  rows: rows.map((r) => `${r.backend}/${r.mode}`),
  run: (opts) =>
    forEachRow('redis-failover', rows, opts, async ({ mode, query, acknowledged }) => {
      const s = await servers();
      // shutdown-timeout 0: Redis 7 otherwise spends up to 10 s of its SIGTERM shutdown waiting for a
      // lagging replica to catch up, and the paused replica is lagging by design. A crash does not wait.
      const pair = await s.startRedisPrimaryReplica({ args: ['--shutdown-timeout', '0'] });
      try {
        const proxy = await startProxy(pair.primary.host, pair.primary.port);
        try {
          await followPrimaryByAddress(pair, 10_000);
          if (!acknowledged) await freezeReplication(pair);
          const ttlMs = 8000;
          const spec: RunSpec = {
            url: `${proxy.rewrite(pair.primary.url)}?${query}`,
            clients: 3,
            childClients: 1,
            durationMs: opts.quick ? 10_000 : 12_000,
            ttlMs,
            // Long enough to cover a container stop, unpause and promotion on a busy machine.
            holdMs: 6000,
            othersStartAfterFirstHold: true,
            // A Redis of its own, not the failing pair: the failover does not touch the data.
            fencedStore: fencedStoreFor('redis'),
          };
          const history = await runWorkload(spec, (ctx) => failOverDuringFirstHold(ctx, pair, proxy, acknowledged));
          return acknowledged
            ? row(
                'redis',
                mode,
                'redis-failover',
                history,
                "exclusive: c0's grant was on the replica before c0 held it, so the promoted replica refuses the others until it expires; with no replica left, the new primary then refuses every grant (unacknowledged)",
                (c) => c.overlaps === 0,
              )
            : row('redis', mode, 'redis-failover', history, failoverOverlaps, (c) => c.overlaps > 0);
        } finally {
          await proxy.close();
        }
      } finally {
        await pair.stop();
      }
    }),
};
