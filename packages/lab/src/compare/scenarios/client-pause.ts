import type { RunContext, RunSpec } from '../run.js';
import { runWorkload } from '../run.js';
import { requireAdapter, row, servers, sleep, type Scenario, type ScenarioResult } from '../scenario-kit.js';

/**
 * SIGSTOP the child client c0 inside its first critical section (after its lock check, before its
 * write), for three ttls, then SIGCONT: Kleppmann's GC pause. With othersStartAfterFirstHold the
 * nemesis is called as c0 enters that hold (it works for holdMs before writing), so the pause
 * always lands inside it and the run is the same every time.
 */
async function pauseFirstHold(ctx: RunContext, ttlMs: number): Promise<void> {
  const child = ctx.children[0];
  if (!child) throw new Error('client-pause needs a child-process client');
  await ctx.fault(`SIGSTOP c0 ${ttlMs * 3}ms`, async () => {
    child.kill('SIGSTOP');
    await sleep(ttlMs * 3);
    child.kill('SIGCONT');
  });
}

interface Target {
  backend: string; mode: string; pkg: string; start: () => Promise<{ url: string; stop(): Promise<void> }>; url: (u: string) => string;
  /** Memcached has no fencing tokens: nothing can tell its stale write from a fresh one. */
  unfenced?: boolean;
}

export const clientPause: Scenario = {
  name: 'client-pause',
  quick: true,
  async run({ quick, onRow }) {
    const s = await servers();
    const out: ScenarioResult[] = [];
    const ttlMs = 1000;
    const base = { clients: 3, childClients: 1, durationMs: quick ? 6000 : 8000, ttlMs, holdMs: 300, othersStartAfterFirstHold: true };
    const targets: Target[] = [
      { backend: 'redis', mode: 'setnx', pkg: '@deadbolt/redis', start: () => s.startRedis(), url: (u) => `${u}?mode=setnx` },
      ...(quick ? [] : [
        { backend: 'redis', mode: 'hash-reentrant', pkg: '@deadbolt/redis', start: () => s.startRedis(), url: (u: string) => `${u}?mode=hash-reentrant` },
        { backend: 'memcached', mode: 'default', pkg: '@deadbolt/memcached', start: () => s.startMemcached(), url: (u: string) => u, unfenced: true },
        { backend: 'postgres', mode: 'lease', pkg: '@deadbolt/postgres', start: () => s.startPostgres(), url: (u: string) => `${u}?mode=lease` },
      ]),
    ];
    for (const t of targets) {
      await requireAdapter(t.pkg);
      const server = await t.start();
      try {
        const spec: RunSpec = { ...base, url: t.url(server.url) };
        const history = await runWorkload(spec, (ctx) => pauseFirstHold(ctx, ttlMs));
        const r = t.unfenced
          ? row(t.backend, t.mode, 'client-pause', history,
            'overlaps (the lease expires under a paused holder); no fencing tokens, so no store can refuse the stale write',
            (c) => c.violations > 0)
          : row(t.backend, t.mode, 'client-pause', history,
            'overlaps (the lease expires under a paused holder, whatever the class); 0 stale writes accepted by the fenced store',
            (c) => c.violations > 0 && c.staleWritesAcceptedFenced === 0);
        out.push(r); onRow?.(r);
      } finally { await server.stop(); }
    }
    return out;
  },
};
