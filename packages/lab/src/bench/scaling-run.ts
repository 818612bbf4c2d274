import type { ServerHandle } from '@deadbolt/conformance/servers';
import type { BackendPlan } from './catalog.js';
import { runHeld } from './held-locks.js';
import { type Contestant, runInterleaved } from './interleave.js';
import type { ScalingPoints } from './scaling-points.js';
import { type ContentionPoint, type HeldPoint, isHandoff, type KeysPoint } from './scaling-results.js';
import { round } from './stats.js';
import type { BenchRow, Subject } from './subject.js';
import { openContended, openUncontended } from './workloads.js';

/** What one backend's scaling run needs besides its plan. */
export interface ScalingContext {
  readonly plan: BackendPlan;
  readonly server: ServerHandle | undefined;
  readonly points: ScalingPoints;
  /** Deadbolt modes to measure (empty: all of the plan's); baselines and peers always run. */
  readonly modes: ReadonlySet<string>;
  readonly runId: string;
  readonly progress: (label: string) => void;
  readonly onError: (label: string, error: unknown) => void;
}

const ttlMs = 10_000;

function wantedMode(context: ScalingContext, mode: string): boolean {
  return context.modes.size === 0 || context.modes.has(mode);
}

/**
 * The subjects of the contention curve: the chosen Deadbolt modes, the hand-off (the token on Redis,
 * else the bare protocol, whose blocking form is that server's best hand-off) and the peers.
 * On Redis the polling SET NX raw loop is left out: the token hand-off is the limit there.
 */
function contentionSubjects(context: ScalingContext): Subject[] {
  const all = context.plan.subjects(context.server, ttlMs);
  const hasToken = all.some((subject) => subject.subject === 'token-handoff');
  return all.filter((subject) =>
    subject.subject === 'deadbolt' ? wantedMode(context, subject.mode) : subject.subject !== 'raw' || !hasToken,
  );
}

/** Owner changes/s of each row over the hand-off's at the same point. */
function contentionPoints(rows: readonly BenchRow[], workers: number, hasToken: boolean): ContentionPoint[] {
  const handoff = rows.find((row) => isHandoff(row, hasToken));
  // One worker never changes owner: there the curve starts from acquisitions/s, the loop's own speed.
  const changes = (row: BenchRow): number => (workers === 1 ? row.opsPerSec : (row.ownerChangesPerSec ?? 0));
  return rows.map((row) => {
    const mine = changes(row);
    const limit = handoff ? changes(handoff) : 0;
    return {
      backend: row.backend,
      mode: row.mode,
      subject: row.subject,
      workers,
      ownerChangesPerSec: mine,
      acquisitionsPerSec: row.opsPerSec,
      p50Ms: row.p50Ms,
      p99Ms: row.p99Ms,
      maxMs: row.maxMs,
      fairness: row.fairness !== null && Number.isFinite(row.fairness) ? row.fairness : null,
      starvedWorkers: row.extra?.starvedWorkers ?? 0,
      failures: row.failures ?? 0,
      vsHandoff: row === handoff || limit <= 0 ? null : round(mine / limit, 2),
    };
  });
}

export async function runContention(context: ScalingContext): Promise<ContentionPoint[]> {
  const subjects = contentionSubjects(context);
  const hasToken = subjects.some((subject) => subject.subject === 'token-handoff');
  const points: ContentionPoint[] = [];
  for (const workers of context.points.workers) {
    context.progress(`${context.plan.backend} contention, ${workers} worker(s) on one key: ${subjects.length} subjects interleaved`);
    const contestants: Contestant[] = subjects.map((subject, index) => ({
      label: `${subject.backend} ${subject.mode} ${subject.subject} ${workers} workers`,
      open: () =>
        openContended(
          subject,
          { workers, holdMs: 0, workload: 'contended-50', kind: 'mutex' },
          `bench-scaling:${context.runId}:c${workers}:${index}`,
        ),
    }));
    points.push(...contentionPoints(await runInterleaved(contestants, context.points.schedule, context.onError), workers, hasToken));
  }
  return points;
}

export async function runKeysInFlight(context: ScalingContext): Promise<KeysPoint[]> {
  // The hand-off is a contended limit only; every other subject runs the loop on distinct keys.
  const subjects = context.plan
    .subjects(context.server, ttlMs)
    .filter((subject) => subject.subject !== 'token-handoff' && (subject.subject !== 'deadbolt' || wantedMode(context, subject.mode)));
  const points: KeysPoint[] = [];
  for (const keys of context.points.keys) {
    context.progress(`${context.plan.backend} ${keys} key(s) in flight: ${subjects.length} subjects interleaved`);
    const contestants: Contestant[] = subjects.map((subject, index) => ({
      label: `${subject.backend} ${subject.mode} ${subject.subject} ${keys} keys`,
      open: () => openUncontended(subject, keys, `bench-scaling:${context.runId}:k${keys}:${index}`, 'uncontended-50'),
    }));
    const rows = await runInterleaved(contestants, context.points.schedule, context.onError);
    points.push(
      ...rows.map((row) => ({
        backend: row.backend,
        mode: row.mode,
        subject: row.subject,
        keys,
        opsPerSec: row.opsPerSec,
        p50Ms: row.p50Ms,
        p99Ms: row.p99Ms,
        failures: row.failures ?? 0,
      })),
    );
  }
  return points;
}

export async function runHeldLocks(context: ScalingContext): Promise<HeldPoint[]> {
  const points: HeldPoint[] = [];
  const { heldTtlMs, heldPeriods } = context.points;
  // A backend whose expiries are whole seconds (memcached) keeps its own, longer ttl.
  const ttl = Math.max(heldTtlMs, context.plan.scale?.ttlMs ?? 0);
  for (const { mode, url } of context.plan.scaleUrls(context.server).filter((entry) => wantedMode(context, entry.mode))) {
    for (const locks of context.points.held) {
      const label = `${context.plan.backend} ${mode} holding ${locks} locks (ttl ${ttl} ms, ${heldPeriods} periods)`;
      context.progress(label);
      try {
        points.push(
          await runHeld(url, context.plan.backend, mode, {
            locks,
            ttlMs: ttl,
            periods: heldPeriods,
            keyspace: `bench-scaling:${context.runId}:h${locks}:${mode}`,
          }),
        );
      } catch (error) {
        context.onError(label, error);
      }
    }
  }
  return points;
}
