import type { CheckResult } from './checker.js';
import { fencedStoreFor } from './data-servers.js';
import { pauseFirstHolder } from './pause.js';
import { runWorkload, type RunSpec } from './run.js';
import { forEachRow, requireCapability, row, servers, type Scenario } from './scenario-kit.js';
import type { Target } from './targets.js';

/** What a row's class predicts for the run, and the check that says whether the run matched it. */
export interface Prediction {
  readonly expectation: string;
  readonly ok: (c: CheckResult) => boolean;
}

export interface PauseScenarioSpec {
  readonly name: string;
  readonly description: string;
  readonly rows: readonly Target[];
  /** The primitive the rows need; a backend without it skips its row, saying why. */
  readonly capability?: 'election' | 'readWrite' | 'semaphore';
  readonly clients: number;
  readonly permits?: number;
  readonly perClient?: RunSpec['perClient'];
  /** Who is frozen, for the fault's label on the timeline ("writer c0"). */
  readonly paused: string;
  readonly predict: (t: Target) => Prediction;
  /** Lock-delay, in ttls, for every client (`?lockDelayMs=`); the run lasts that much longer. Absent: none. */
  readonly lockDelayTtls?: number;
}

/**
 * Kleppmann's GC pause, one shape for the mutex and every primitive: c0 (a child process) is
 * frozen (SIGSTOP) as it enters its first hold, after its check and before its write, for three
 * ttls, then thawed. The pause always lands inside that hold (othersStartAfterFirstHold), so a run
 * is the same every time.
 */
export function pauseScenario(spec: PauseScenarioSpec): Scenario {
  return {
    name: spec.name,
    description: spec.description,
    rows: spec.rows.map((r) => `${r.backend}/${r.mode}`),
    run: (opts) =>
      forEachRow(spec.name, spec.rows, opts, async (t) => {
        const server = await t.start(await servers());
        try {
          const lockDelayMs = t.ttlMs * (spec.lockDelayTtls ?? 0);
          const plainUrl = t.url(server.url);
          const url = lockDelayMs > 0 ? `${plainUrl}${plainUrl.includes('?') ? '&' : '?'}lockDelayMs=${lockDelayMs}` : plainUrl;
          if (spec.capability) await requireCapability(url, spec.capability);
          const run: RunSpec = {
            url,
            clients: spec.clients,
            childClients: 1,
            durationMs: t.ttlMs * (opts.quick ? 5 : 7) + lockDelayMs,
            ttlMs: t.ttlMs,
            holdMs: 300,
            othersStartAfterFirstHold: true,
            fencedStore: fencedStoreFor(t.backend),
            ...(spec.permits === undefined ? {} : { permits: spec.permits }),
            ...(spec.perClient ? { perClient: spec.perClient } : {}),
          };
          const pauseMs = t.ttlMs * 3;
          const history = await runWorkload(run, (ctx) =>
            pauseFirstHolder(ctx, `${spec.paused} paused (SIGSTOP) ${pauseMs / 1000} s`, pauseMs),
          );
          const { expectation, ok } = spec.predict(t);
          return row(t.backend, t.mode, spec.name, history, expectation, ok);
        } finally {
          await server.stop();
        }
      }),
  };
}

/** A paused holder keeps a session-bound lock (its database session stays open): nobody overlaps. */
export function sessionKeeps(what: string): Prediction {
  return { expectation: `0 overlaps: ${what}`, ok: (c) => c.overlaps === 0 };
}
