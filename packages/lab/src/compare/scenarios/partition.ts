import { startProxy, type TcpProxy } from '../proxy.js';
import type { RunContext, RunSpec } from '../run.js';
import { runWorkload } from '../run.js';
import { requireAdapter, row, servers, sleep, SkipError, type Scenario, type ScenarioResult } from '../scenario-kit.js';

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
  await ctx.fault(`partition c0 ${ttlMs * 3}ms`, async () => {
    proxy.partition();
    try { await sleep(ttlMs * 3); } finally { proxy.heal(); }
  });
}

interface Target {
  readonly backend: string;
  readonly mode: string;
  readonly pkg: string;
  /** The lease (or, for ZooKeeper, the session timeout) the run uses. */
  readonly ttlMs: number;
  start(): Promise<{ url: string; host: string; port: number; stop(): Promise<void> }>;
  url(serverUrl: string): string;
}

function targets(s: Awaited<ReturnType<typeof servers>>): Target[] {
  return [
    { backend: 'redis', mode: 'setnx', pkg: '@deadbolt/redis', ttlMs: 1000, start: () => s.startRedis(), url: (u) => `${u}?mode=setnx` },
    { backend: 'postgres', mode: 'lease', pkg: '@deadbolt/postgres', ttlMs: 1000, start: () => s.startPostgres(), url: (u) => `${u}?mode=lease` },
    {
      // A lock lives as long as the ZooKeeper session, so the session timeout plays the ttl (the
      // ttl itself is ignored). tickTime 500 lets the server grant a 2 s session (2..20 ticks).
      backend: 'zookeeper', mode: 'ephemeral-sequential', pkg: '@deadbolt/zookeeper', ttlMs: 2000,
      start: () => s.startZooKeeper({ tickTimeMs: 500 }), url: (u) => `${u}?sessionTimeoutMs=2000`,
    },
    { backend: 'memcached', mode: 'default', pkg: '@deadbolt/memcached', ttlMs: 1000, start: () => s.startMemcached(), url: (u) => u },
  ];
}

async function runTarget(t: Target): Promise<ScenarioResult> {
  const server = await t.start();
  try {
    const proxy = await startProxy(server.host, server.port);
    try {
      const url = t.url(server.url);
      const spec: RunSpec = {
        url, clients: 3, childClients: 1, durationMs: t.ttlMs * 10, ttlMs: t.ttlMs,
        // Longer than the ttl: c0 is still working, on renewals, when the partition cuts them.
        holdMs: Math.round(t.ttlMs * 2.5),
        othersStartAfterFirstHold: true,
        perClient: (i) => ({ autoRenew: true, ...(i === 0 ? { url: proxy.rewrite(url) } : {}) }),
      };
      const history = await runWorkload(spec, (ctx) => partitionFirstHold(ctx, proxy, t.ttlMs));
      return row(t.backend, t.mode, 'partition', history,
        '0 overlaps: the cut-off holder is told it lost the lock before its lease can have expired on the server (at least 1 lost notice)',
        (c) => c.violations === 0 && c.lostNotices > 0);
    } finally { await proxy.close(); }
  } finally { await server.stop(); }
}

export const partition: Scenario = {
  name: 'partition',
  quick: false,
  async run({ onRow }) {
    const s = await servers();
    const out: ScenarioResult[] = [];
    const skipped: string[] = [];
    for (const t of targets(s)) {
      try {
        await requireAdapter(t.pkg);
      } catch (error) {
        // One missing adapter skips its row, not the others.
        if (error instanceof SkipError) { skipped.push(error.message); continue; }
        throw error;
      }
      const r = await runTarget(t);
      out.push(r); onRow?.(r);
    }
    if (out.length === 0) throw new SkipError(skipped.join('; '));
    for (const reason of skipped) process.stderr.write(`partition: row skipped, ${reason}\n`);
    return out;
  },
};
