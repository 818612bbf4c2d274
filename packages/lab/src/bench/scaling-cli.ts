import { loadavg } from 'node:os';
import type { ServerHandle } from '@deadbolt/conformance/servers';
import type { BackendPlan } from './catalog.js';
import { describeMachine } from './report.js';
import type { ScalingPoints } from './scaling-points.js';
import { writeScalingResults } from './scaling-report.js';
import type { ContentionPoint, HeldPoint, KeysPoint } from './scaling-results.js';
import { runContention, runHeldLocks, runKeysInFlight, type ScalingContext } from './scaling-run.js';

export interface ScalingOptions {
  readonly plans: readonly BackendPlan[];
  readonly backends: ReadonlySet<string>;
  readonly modes: ReadonlySet<string>;
  readonly points: ScalingPoints;
  readonly out: string;
}

/**
 * `npm run bench -- --scaling`: for each chosen backend, the contention curve (N workers on one key,
 * beside the hand-off and the peers), the held-locks curve and the keys-in-flight curve, written to
 * `out` as results.json, results.md and index.html (the charts).
 */
export async function runScaling(options: ScalingOptions): Promise<void> {
  const startedAt = new Date();
  const loadAverageAtStart = loadavg();
  const runId = Date.now().toString(36);
  const contention: ContentionPoint[] = [];
  const held: HeldPoint[] = [];
  const keys: KeysPoint[] = [];
  const providers = new Set<string>();
  const progress = (label: string): void => {
    process.stderr.write(
      `[bench --scaling] ${((Date.now() - startedAt.getTime()) / 1000).toFixed(0)} s, load ${loadavg()[0]!.toFixed(2)}: ${label}\n`,
    );
  };
  const onError = (label: string, error: unknown): void =>
    console.error(`[bench --scaling] ${label} failed: ${error instanceof Error ? error.message : String(error)}`);
  for (const plan of options.plans) {
    if (options.backends.size > 0 && !options.backends.has(plan.backend)) continue;
    let server: ServerHandle | undefined;
    try {
      server = await plan.start();
    } catch (error) {
      onError(`${plan.backend} server`, error);
      continue;
    }
    if (server) providers.add(server.provider);
    const context: ScalingContext = { plan, server, points: options.points, modes: options.modes, runId, progress, onError };
    try {
      contention.push(...(await runContention(context)));
      held.push(...(await runHeldLocks(context)));
      keys.push(...(await runKeysInFlight(context)));
    } finally {
      await server?.stop();
    }
  }
  const { schedule, heldTtlMs, heldPeriods } = options.points;
  writeScalingResults(options.out, {
    machine: describeMachine(providers.size > 0 ? [...providers].join('+') : 'none (memory only)'),
    method: {
      schedule,
      heldTtlMs,
      heldPeriods,
      loadAverageAtStart,
      loadAverageAtEnd: loadavg(),
      startedAt: startedAt.toISOString(),
      elapsedSeconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
    },
    contention,
    held,
    keys,
  });
  console.log(`wrote ${options.out}/results.json, results.md and index.html`);
}
