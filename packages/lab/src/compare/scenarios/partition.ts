import { startProxy, type TcpProxy } from '@deadbolt/conformance/servers';
import { fencedStoreFor } from '../data-servers.js';
import type { RunContext, RunSpec } from '../run.js';
import { runWorkload } from '../run.js';
import { forEachRow, row, servers, sleep, type Scenario, type ScenarioResult } from '../scenario-kit.js';
import { targets, type Target, type TargetName } from '../targets.js';

/**
 * A network partition between one holder and the server: c0 (a child process) reaches the server
 * through a proxy, the others directly. As c0 enters its first critical section the proxy stops
 * forwarding for three ttls, silently (no RST, no FIN: the bytes wait in TCP buffers), then heals.
 *
 * c0's work (holdMs) is longer than its ttl, so it relies on auto-renewal, and the partition cuts
 * the renewals: the server's lease runs out and another client takes the lock. What a correct
 * client library must do is tell c0 it lost the lock BEFORE the server can have let it go (a
 * lease-based client can: it counts its own ttl from when it sent the last confirmed renewal).
 * The checker ends c0's interval at that notice, so a library that tells in time shows 0 overlaps
 * whatever the backend's class; one that only finds out after the heal shows an overlap.
 */
async function partitionFirstHold(ctx: RunContext, proxy: TcpProxy, ttlMs: number): Promise<void> {
  await ctx.fault(`c0 cut off (partition) ${(ttlMs * 3) / 1000} s`, async () => {
    proxy.partition();
    try {
      await sleep(ttlMs * 3);
    } finally {
      proxy.heal();
    }
  });
}

const rows: TargetName[] = [
  'redis/setnx',
  'redis/fair',
  'postgres/lease',
  'zookeeper/ephemeral-sequential',
  'etcd/concurrency-mutex',
  'memcached/default',
];

async function runTarget(t: Target, quick: boolean): Promise<ScenarioResult> {
  const server = await t.start(await servers());
  try {
    const proxy = await startProxy(server.host, server.port);
    try {
      const url = t.url(server.url);
      const spec: RunSpec = {
        url,
        clients: 3,
        childClients: 1,
        durationMs: t.ttlMs * (quick ? 7 : 8),
        ttlMs: t.ttlMs,
        // Longer than the ttl: c0 is still working, on renewals, when the partition cuts them.
        holdMs: Math.round(t.ttlMs * 2.5),
        othersStartAfterFirstHold: true,
        fencedStore: fencedStoreFor(t.backend),
        perClient: (i) => ({ autoRenew: true, ...(i === 0 ? { url: proxy.rewrite(url) } : {}) }),
      };
      const history = await runWorkload(spec, (ctx) => partitionFirstHold(ctx, proxy, t.ttlMs));
      return row(
        t.backend,
        t.mode,
        'partition',
        history,
        '0 overlaps: the cut-off holder is told it lost the lock before its lease can have expired on the server (at least 1 loss notice)',
        (c) => c.overlaps === 0 && c.lostNotices > 0,
      );
    } finally {
      await proxy.close();
    }
  } finally {
    await server.stop();
  }
}

export const partition: Scenario = {
  name: 'partition',
  description:
    'The first holder is cut off from the server for three ttls while it works and needs to renew its lease: the network drops nothing and refuses nothing, bytes just stop arriving (a TCP proxy the harness controls). A correct client library tells the holder it lost the lock before the server can have given it to anyone else.',
  rows,
  run: (opts) => forEachRow('partition', targets(rows), opts, (t) => runTarget(t, opts.quick)),
};
