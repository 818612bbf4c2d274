import { check, type CheckResult } from './checker.js';
import type { History } from './history.js';
import { runWorkload, type RunContext, type RunSpec } from './run.js';

export type ConsistencyClass = 'CP' | 'AP';

export interface ScenarioResult {
  readonly backend: string;
  readonly mode: string;
  readonly class: ConsistencyClass;
  readonly scenario: string;
  readonly history: History;
  readonly check: CheckResult;
  /** What the class predicts, and whether the run matched it. */
  readonly expectation: string;
  readonly matched: boolean;
}

export interface Scenario {
  readonly name: string;
  /** One scenario per class runs under --quick. */
  readonly quick: boolean;
  /** Rows this scenario produces (one per backend/mode). Throws SkipError when it cannot run here. */
  run(opts: { quick: boolean; onRow?: (r: ScenarioResult) => void }): Promise<ScenarioResult[]>;
}

export class SkipError extends Error {}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Imports an adapter package so it registers its scheme; a missing build is a skip, not a failure. */
export async function requireAdapter(pkg: string): Promise<void> {
  try {
    await import(pkg);
  } catch (error) {
    throw new SkipError(`${pkg} cannot be imported (${(error as Error).message.split('\n')[0]})`);
  }
}

async function servers(): Promise<typeof import('../servers/index.js')> {
  return import('../servers/index.js');
}

function row(backend: string, mode: string, cls: ConsistencyClass, scenario: string, history: History, expectation: string, ok: (c: CheckResult) => boolean): ScenarioResult {
  const c = check(history);
  // A run with no acquisitions shows nothing about the class: never call it a match.
  return { backend, mode, class: cls, scenario, history, check: c, expectation, matched: c.acquisitions > 0 && ok(c) };
}

/** Client pause: SIGSTOP the first child longer than the ttl while it holds the lock, then SIGCONT. */
async function pauseHolder(ctx: RunContext, ttlMs: number, waitBeforeMs: number): Promise<void> {
  await sleep(waitBeforeMs);
  const child = ctx.children[0];
  if (!child) throw new Error('client-pause needs a child-process client');
  // Stop it inside a critical section: after acquire, before its write (the work takes holdMs).
  await Promise.race([ctx.nextHold(0), sleep(ttlMs * 5)]);
  await ctx.fault(`SIGSTOP c0 ${ttlMs * 3}ms`, async () => {
    child.kill('SIGSTOP');
    await sleep(ttlMs * 3);
    child.kill('SIGCONT');
  });
}

const clientPause: Scenario = {
  name: 'client-pause',
  quick: true,
  async run({ quick, onRow }) {
    const s = await servers();
    const out: ScenarioResult[] = [];
    const ttlMs = 1000;
    // Holds longer than the pause start so the pause lands inside a critical section of c0.
    const base = { clients: 3, childClients: 1, durationMs: quick ? 7000 : 9000, ttlMs, holdMs: 300 };
    const targets: { backend: string; mode: string; pkg: string; start: () => Promise<{ url: string; stop(): Promise<void> }>; url: (u: string) => string }[] = [
      { backend: 'redis', mode: 'setnx', pkg: '@deadbolt/redis', start: () => s.startRedis(), url: (u) => `${u}?mode=setnx` },
      ...(quick ? [] : [
        { backend: 'memcached', mode: 'default', pkg: '@deadbolt/memcached', start: () => s.startMemcached(), url: (u: string) => u },
        { backend: 'postgres', mode: 'lease', pkg: '@deadbolt/postgres', start: () => s.startPostgres(), url: (u: string) => `${u}?mode=lease` },
      ]),
    ];
    for (const t of targets) {
      await requireAdapter(t.pkg);
      const server = await t.start();
      try {
        const spec: RunSpec = { ...base, url: t.url(server.url) };
        // The paused child holds c0's lock: wait for it to have acquired at least once, roughly.
        const history = await runWorkload(spec, (ctx) => pauseHolder(ctx, ttlMs, 300));
        const r = row(t.backend, t.mode, 'AP', 'client-pause', history,
          'overlaps possible (lease expires under a paused holder); 0 stale writes accepted by the fenced store',
          (c) => c.staleWritesAcceptedFenced === 0);
        out.push(r); onRow?.(r);
      } finally { await server.stop(); }
    }
    return out;
  },
};

const zookeeperLeaderLoss: Scenario = {
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
      const r = row('zookeeper', 'ephemeral-sequential', 'CP', 'zookeeper-leader-loss', history,
        '0 overlaps; an unavailability window during the election', (c) => c.violations === 0);
      onRow?.(r);
      return [r];
    } finally { await ensemble.stop(); }
  },
};

/** One client's clock ahead by more than the ttl: getset trusts it and steals a live lock; setnx uses server TTLs. */
const getsetClockSkew: Scenario = {
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
          // Only getset reads the injected clock; the option is rejected by nothing else in redis.
          perClient: (i) => (i === 0 ? { clockSkewMs: ttlMs * 3 } : {}),
        };
        const history = await runWorkload(spec, async (ctx) => { await ctx.fault('c0 clock +3s', () => sleep(spec.durationMs)); });
        const r = row('redis', mode, 'AP', 'getset-clock-skew', history,
          mode === 'getset' ? 'overlaps (client clocks decide expiry)' : 'no overlaps (server-side TTL)',
          (c) => (mode === 'getset' ? c.violations > 0 : c.violations === 0));
        out.push(r); onRow?.(r);
      }
    } finally { await server.stop(); }
    return out;
  },
};

const postgresRestart: Scenario = {
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
        const r = row('postgres', mode, 'CP', 'postgres-restart', history,
          mode === 'advisory' ? 'holders told they lost the lock; 0 overlaps when they obey' : '0 overlaps',
          (c) => c.violations === 0);
        out.push(r); onRow?.(r);
      }
    } finally { await server.stop(); }
    return out;
  },
};

export const scenarios: readonly Scenario[] = [clientPause, zookeeperLeaderLoss, getsetClockSkew, postgresRestart];
/** Named in the issue, not yet implemented here (reported as skipped with this reason). */
export const plannedScenarios: Readonly<Record<string, string>> = {
  'redis-failover': 'not implemented yet (needs startRedisPrimaryReplica + REPLICAOF NO ONE nemesis)',
  'redlock-restart': 'not implemented yet (needs startRedisMasters(5) + restart without persistence)',
  partition: 'not implemented yet (in-process node:net TCP proxy)',
};
