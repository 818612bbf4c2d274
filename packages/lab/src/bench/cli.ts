#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { startMemcached, startPostgres, startRedis, startZooKeeper, type ServerHandle } from '@deadbolt/conformance/servers';
import { backendPlans, type BackendPlan } from './catalog.js';
import { addMutexRatios, runPrimitive } from './primitives.js';
import { addRatios, describeMachine, renderTable, writeResults } from './report.js';
import { runScale } from './scale.js';
import type { BenchRow, Subject } from './subject.js';
import { runContended, runUncontended } from './workloads.js';

const help = `npm run bench -- [--quick] [--backend NAME]... [--out DIR]

Throughput, latency and fairness of every available backend and mode, beside the raw client doing
the bare protocol and beside node-redlock and redis-semaphore, all in one run on real servers.
  --quick        a ~30 s subset (sequential and 10-worker contention, short runs, no scale run)
  --backend X    only these backends (memory, redis, postgres, memcached, zookeeper); repeatable
  --out DIR      where results.json and results.md go (default bench-results)`;

interface Measurement {
  readonly label: string;
  run(): Promise<BenchRow>;
}

function planMeasurements(
  plan: BackendPlan,
  server: ServerHandle | undefined,
  quick: boolean,
  runId: string,
  baselinesOnly: boolean,
): Measurement[] {
  const ttlMs = 10_000;
  const durationMs = quick ? 700 : 2_500;
  // Without the adapter the baselines (raw client, peers) still run: they need only the server.
  const subjects = plan.subjects(server, ttlMs).filter((subject) => !baselinesOnly || subject.subject !== 'deadbolt');
  const measurements: Measurement[] = [];
  let counter = 0;
  const keyspace = (): string => `bench:${runId}:${(counter += 1)}`;
  const add = (
    subject: Subject,
    workload: string,
    run: (settings: { durationMs: number; keyspace: string }) => Promise<BenchRow>,
  ): void => {
    measurements.push({
      label: `${subject.backend} ${subject.mode} ${subject.subject} ${workload}`,
      run: () => run({ durationMs, keyspace: keyspace() }),
    });
  };
  for (const subject of subjects) {
    // The token hand-off is the limit of contended rows only: uncontended, it is a pop and a push.
    const locks = subject.subject !== 'token-handoff';
    if (locks) add(subject, 'uncontended', (settings) => runUncontended(subject, 1, settings));
    if (locks && !quick) add(subject, 'uncontended-50', (settings) => runUncontended(subject, 50, settings));
    add(subject, 'contended-10 hold 0', (settings) => runContended(subject, 10, 0, settings));
    if (!quick) {
      add(subject, 'contended-10 hold 1ms', (settings) => runContended(subject, 10, 1, settings));
      add(subject, 'contended-50 hold 0', (settings) => runContended(subject, 50, 0, settings));
    }
  }
  for (const run of baselinesOnly ? [] : (plan.primitives?.(server, ttlMs, quick ? [0] : [0, 1]) ?? [])) {
    const hold = run.workers > 1 ? ` hold ${run.holdMs}ms` : '';
    measurements.push({
      label: `${run.subject.backend} ${run.subject.mode} ${run.subject.subject} ${run.workload}${hold}`,
      run: () => runPrimitive(run, { durationMs, keyspace: keyspace() }),
    });
  }
  if (!quick && !baselinesOnly) {
    const locks = plan.scale?.locks ?? 10_000;
    const scaleTtlMs = plan.scale?.ttlMs ?? 1_500;
    const why = plan.scale ? ` (${locks} locks, ttl ${scaleTtlMs} ms: ${plan.scale.why})` : '';
    for (const { mode, url } of plan.scaleUrls(server)) {
      measurements.push({
        label: `${plan.backend} ${mode} deadbolt scale-10k${why}`,
        run: () => runScale(url, mode, plan.backend, { locks, ttlMs: scaleTtlMs, periods: 3, keyspace: keyspace() }),
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
  const rows: BenchRow[] = [];
  const providers = new Set<string>();
  for (const plan of backendPlans({ redis: startRedis, postgres: startPostgres, memcached: startMemcached, zookeeper: startZooKeeper })) {
    if (wanted.size > 0 && !wanted.has(plan.backend)) continue;
    const missing = await adapterMissing(plan);
    if (missing) console.error(`[bench] ${plan.backend}: baselines only, no deadbolt rows: ${missing}`);
    const server = await plan.start();
    if (server) providers.add(server.provider);
    try {
      const measurements = planMeasurements(plan, server, quick, runId, missing !== undefined);
      for (const [index, measurement] of measurements.entries()) {
        progress(index + 1, measurements.length, measurement.label);
        try {
          rows.push(await measurement.run());
        } catch (error) {
          console.error(`\n[bench] ${measurement.label} failed: ${error instanceof Error ? error.message : String(error)}`);
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
  writeResults(out, machine, rows);
  console.log(renderTable(rows));
  console.log(`\nwrote ${out}/results.json and ${out}/results.md`);
}

main().catch((error: unknown) => {
  console.error(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
