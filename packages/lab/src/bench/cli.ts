#!/usr/bin/env node
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import {
  startMemcached,
  startPostgres,
  startRedis,
  startRedisPrimaryReplica,
  startZooKeeper,
  startEtcd,
  type ServerHandle,
} from '@deadbolt/conformance/servers';
import { backendPlans, type BackendPlan } from './catalog.js';
import { type Contestant, runInterleaved, type SliceSchedule } from './interleave.js';
import { addMutexRatios, openPrimitive } from './primitives.js';
import { addRatios, describeMachine, renderTable, writeResults } from './report.js';
import { runScale } from './scale.js';
import { runScaling } from './scaling-cli.js';
import { choosePoints } from './scaling-points.js';
import type { BenchRow, Subject } from './subject.js';
import { contendedWorkload, openContended, openUncontended, type Slicer } from './workloads.js';

const help = `npm run bench -- [--quick] [--backend NAME]... [--out DIR]

Throughput, latency and fairness of every available backend and mode, beside the raw client doing
the bare protocol and beside node-redlock and redis-semaphore, all in one run on real servers.
Subjects compared with each other run interleaved (alternating slices), so they see the same load.
  --quick        a ~30 s subset (uncontended and 10-worker contention, short runs, no scale run)
  --backend X    only these backends (memory, redis, redis-replicated, postgres, memcached, zookeeper, etcd);
                 repeatable. redis-replicated: setnx with and without replicas=1 on a primary with one replica
  --out DIR      where results.json and results.md go (default bench-results)

npm run bench -- --scaling [--quick] [--backend NAME]... [--mode MODE]... [--points 1,10,200] [--held 1000,100000|none] [--keys 1,1000|none] [--held-ttl MS]
  Curves instead of rows: N workers on one key (1 to 200) beside the hand-off and the peers, 1,000 to
  100,000 held locks (heap, renewals, CPU), 1 to 1,000 keys in flight; writes results.json,
  results.md and index.html (charts) to --out (default bench-results/scaling). --mode picks Deadbolt
  modes (baselines always run); --quick trims every curve to a few points; --held-ttl sets the held
  locks' ttl (default 3000 ms: a renewal tick every second).`;

interface Measurement {
  readonly label: string;
  /** `onError`: a subject that failed (its row is left out; the other rows go on). */
  run(onError: (label: string, error: unknown) => void): Promise<BenchRow[]>;
}

/**
 * Every subject that is compared with another (the raw protocol, Deadbolt's modes, the peers, the
 * primitives beside the mutex) runs in the same interleaved measurement as the others of its loop,
 * ~2.5 s each in all (~0.75 s with --quick), in alternating slices: see interleave.ts.
 */
function scheduleFor(quick: boolean): SliceSchedule {
  return quick ? { rounds: 3, sliceMs: 220 } : { rounds: 10, sliceMs: 250 };
}

function planMeasurements(
  plan: BackendPlan,
  server: ServerHandle | undefined,
  quick: boolean,
  runId: string,
  baselinesOnly: boolean,
): Measurement[] {
  const ttlMs = 10_000;
  const schedule = scheduleFor(quick);
  // Without the adapter the baselines (raw client, peers) still run: they need only the server.
  const subjects = plan.subjects(server, ttlMs).filter((subject) => !baselinesOnly || subject.subject !== 'deadbolt');
  let counter = 0;
  const keyspace = (): string => `bench:${runId}:${(counter += 1)}`;
  // Measurements in the order they run; each holds the subjects interleaved with each other.
  const groups = new Map<string, Contestant[]>();
  const join = (group: string, label: string, open: (keyspace: string) => Promise<Slicer>): void => {
    const list = groups.get(group) ?? [];
    list.push({ label, open: () => open(keyspace()) });
    groups.set(group, list);
  };
  const name = (subject: Subject): string => `${subject.backend} ${subject.mode} ${subject.subject}`;
  for (const subject of subjects) {
    // The token hand-off is the limit of contended rows only: uncontended, it is a pop and a push.
    const locks = subject.subject !== 'token-handoff';
    if (locks) join('uncontended', `${name(subject)} uncontended`, (space) => openUncontended(subject, 1, space, 'uncontended'));
    if (locks && !quick) {
      join('uncontended-50', `${name(subject)} uncontended-50`, (space) => openUncontended(subject, 50, space, 'uncontended-50'));
    }
    const contended = (workers: number, holdMs: number): void =>
      join(`contended-${workers} hold ${holdMs}ms`, `${name(subject)} contended-${workers} hold ${holdMs}ms`, (space) =>
        openContended(subject, { workers, holdMs, workload: contendedWorkload(workers), kind: 'mutex' }, space),
      );
    contended(10, 0);
    if (!quick) {
      contended(10, 1);
      contended(50, 0);
    }
  }
  for (const run of baselinesOnly ? [] : (plan.primitives?.(server, ttlMs, quick ? [0] : [0, 1]) ?? [])) {
    // Uncontended primitives run beside the mutex's uncontended row they are compared with.
    const group = run.workers === 1 ? 'uncontended' : `${run.workers} workers on one key hold ${run.holdMs}ms`;
    const hold = run.workers > 1 ? ` hold ${run.holdMs}ms` : '';
    join(group, `${name(run.subject)} ${run.workload}${hold}`, (space) => openPrimitive(run, space));
  }
  const measurements: Measurement[] = [...groups.entries()].map(([group, contestants]) => ({
    label: `${plan.backend} ${group}: ${contestants.length} subject(s) interleaved, ${schedule.rounds} x ${schedule.sliceMs} ms each`,
    run: (onError) => runInterleaved(contestants, schedule, onError),
  }));
  if (!quick && !baselinesOnly) {
    const locks = plan.scale?.locks ?? 10_000;
    const scaleTtlMs = plan.scale?.ttlMs ?? 1_500;
    const why = plan.scale ? ` (${locks} locks, ttl ${scaleTtlMs} ms: ${plan.scale.why})` : '';
    for (const { mode, url } of plan.scaleUrls(server)) {
      const label = `${plan.backend} ${mode} deadbolt scale-10k${why}`;
      measurements.push({
        label,
        run: async () => {
          const probe = plan.scaleProbe?.(server);
          const settings = { locks, ttlMs: scaleTtlMs, periods: 3, keyspace: keyspace(), ...(probe ? { probe } : {}) };
          return [await runScale(url, mode, plan.backend, settings)];
        },
      });
    }
  }
  return measurements;
}

async function adapterMissing(plan: BackendPlan): Promise<string | undefined> {
  if (!plan.adapterPackage) return undefined;
  try {
    await import(plan.adapterPackage);
    return undefined;
  } catch (error) {
    return `${plan.adapterPackage} cannot be imported (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
  }
}

function progress(done: number, total: number, label: string): void {
  const line = `[bench] ${String(done).padStart(3)}/${total} ${label}`;
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${line}`);
  else process.stderr.write(`${line}\n`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      backend: { type: 'string', multiple: true },
      out: { type: 'string' },
      scaling: { type: 'boolean', default: false },
      mode: { type: 'string', multiple: true },
      points: { type: 'string' },
      held: { type: 'string' },
      keys: { type: 'string' },
      'held-ttl': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(help);
    return;
  }
  const quick = values.quick ?? false;
  const wanted = new Set(values.backend ?? []);
  const runId = Date.now().toString(36);
  const loadAtStart = loadavg();
  const rows: BenchRow[] = [];
  const providers = new Set<string>();
  const starters = {
    redis: startRedis,
    postgres: startPostgres,
    memcached: startMemcached,
    zookeeper: startZooKeeper,
    etcd: startEtcd,
    redisReplicated: startReplicatedRedis,
  };
  if (values.scaling) {
    const points = choosePoints(quick, values);
    const options = { backends: wanted, modes: new Set(values.mode ?? []), points, out: values.out ?? 'bench-results/scaling' };
    await runScaling({ ...options, plans: backendPlans(starters) });
    return;
  }
  for (const plan of backendPlans(starters)) {
    if (wanted.size > 0 && !wanted.has(plan.backend)) continue;
    const missing = await adapterMissing(plan);
    if (missing) console.error(`[bench] ${plan.backend}: baselines only, no deadbolt rows: ${missing}`);
    const server = await plan.start();
    if (server) providers.add(server.provider);
    try {
      const measurements = planMeasurements(plan, server, quick, runId, missing !== undefined);
      for (const [index, measurement] of measurements.entries()) {
        progress(index + 1, measurements.length, measurement.label);
        const failed = (label: string, error: unknown): void =>
          console.error(`\n[bench] ${label} failed: ${error instanceof Error ? error.message : String(error)}`);
        try {
          rows.push(...(await measurement.run(failed)));
        } catch (error) {
          failed(measurement.label, error);
        }
      }
    } finally {
      await server?.stop();
    }
  }
  if (process.stderr.isTTY) process.stderr.write('\n');
  addRatios(rows);
  addMutexRatios(rows);
  const machine = describeMachine(providers.size > 0 ? [...providers].join('+') : 'none (memory only)');
  const out = values.out ?? 'bench-results';
  const schedule = scheduleFor(quick);
  writeResults(out, machine, { interleaved: true, ...schedule, loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadavg() }, rows);
  console.log(renderTable(rows));
  console.log(`\nwrote ${out}/results.json and ${out}/results.md`);
}

/** The primary as the handle the bench connects to; its stop() stops the replica too. */
async function startReplicatedRedis(): Promise<ServerHandle> {
  const pair = await startRedisPrimaryReplica();
  return Object.assign(Object.create(pair.primary) as ServerHandle, { stop: () => pair.stop() });
}

main().catch((error: unknown) => {
  console.error(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
