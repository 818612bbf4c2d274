import { fencedStoreFor } from '../data-servers.js';
import type { RunContext, RunSpec } from '../run.js';
import { runWorkload } from '../run.js';
import { forEachRow, row, servers, type Scenario } from '../scenario-kit.js';
import { startProxy, type ServerHandle, type TcpProxy } from '@deadbolt/conformance/servers';

/**
 * Kleppmann's RedLock counter-example ("How to do distributed locking", 2016): five independent
 * masters without persistence. c0 reaches masters 4 and 5 only through proxies that are
 * partitioned while it acquires, so its grant rests on a bare majority, masters 1, 2 and 3 (the
 * redlock mode waits nodeTimeoutMs, a fifth of the ttl, for 4 and 5, then counts 3 of 5 and
 * grants with validity ttl - elapsed - drift). Master 3 then restarts and, with no persistence,
 * comes back empty. The other clients (direct to all five) now win 3, 4 and 5: a second holder
 * while c0 is still inside its critical section. RedLock's safety rests on every master keeping
 * its keys (or staying down for a ttl after a crash): this is a property of the algorithm.
 *
 * c0's proxies heal only once another client holds the lock. Healing earlier would deliver c0's
 * stalled SET NX to masters 4 and 5 (a partition delays bytes, it does not drop them), where it
 * would land on free keys and shut the others out: a different story from the one told here.
 */
async function restartThirdMasterDuringFirstHold(
  ctx: RunContext,
  masters: readonly ServerHandle[],
  proxies: readonly TcpProxy[],
  ttlMs: number,
): Promise<void> {
  // Listening before the restart, so a hold taken the moment master 3 is back is not missed.
  const secondHolder = Promise.race([ctx.nextHold(1), ctx.nextHold(2)]);
  await ctx.fault('master 3 restarted empty', async () => {
    await masters[2]!.down();
    await masters[2]!.up();
  });
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((r) => {
    timer = setTimeout(r, ttlMs);
  });
  await Promise.race([secondHolder, gaveUp]);
  clearTimeout(timer);
  for (const p of proxies) p.heal();
}

const rows = [{ backend: 'redis', mode: 'redlock', pkg: '@deadbolt/redis' }] as const;

export const redlockRestart: Scenario = {
  name: 'redlock-restart',
  description:
    "Kleppmann's RedLock counter-example: five independent Redis masters; the first holder's grant rests on a bare majority (3 of 5), then one of those three restarts without persistence and comes back empty, so another client wins a majority too. (RedLock's own algorithm: the single-server Redis modes meet their version of this in redis-failover.)",
  rows: rows.map((r) => `${r.backend}/${r.mode}`),
  run: (opts) =>
    forEachRow('redlock-restart', rows, opts, async () => {
      const s = await servers();
      // No RDB snapshot, no AOF: a restarted master has lost every key.
      const masters = await s.startRedisMasters(5, { args: ['--save', '', '--appendonly', 'no'] });
      const proxies: TcpProxy[] = [];
      try {
        for (const m of masters.slice(3)) proxies.push(await startProxy(m.host, m.port));
        for (const p of proxies) p.partition();
        const address = (m: ServerHandle): string => `${m.host}:${m.port}`;
        const direct = masters.map(address);
        const viaProxies = [...direct.slice(0, 3), ...proxies.map((p) => p.address)];
        const ttlMs = 10_000;
        const spec: RunSpec = {
          url: `redis://${direct.join(',')}?mode=redlock`,
          clients: 3,
          childClients: 1,
          durationMs: opts.quick ? 12_000 : 14_000,
          ttlMs,
          // c0's acquire spends nodeTimeoutMs (ttl/5) on masters 4 and 5; its hold must then cover a
          // container restart of master 3 on a busy machine and still end inside its validity.
          holdMs: 6000,
          othersStartAfterFirstHold: true,
          fencedStore: fencedStoreFor('redis'),
          perClient: (i) => (i === 0 ? { url: `redis://${viaProxies.join(',')}?mode=redlock` } : {}),
        };
        const history = await runWorkload(spec, (ctx) => restartThirdMasterDuringFirstHold(ctx, masters, proxies, ttlMs));
        return row(
          'redis',
          'redlock',
          'redlock-restart',
          history,
          'overlaps: c0 won masters 1-3 only; master 3 restarted without persistence, so another client wins 3-5 while c0 holds (Kleppmann)',
          (c) => c.overlaps > 0,
        );
      } finally {
        await Promise.all(proxies.map((p) => p.close()));
        await Promise.all(masters.map((m) => m.stop()));
      }
    }),
};
