/** What every scenario shares: the result row, skipping, and the adapter and server imports. */
import { check, type CheckResult } from './checker.js';
import { contradictions } from './consistency.js';
import type { History } from './history.js';
import { outcomeOf } from './outcome.js';

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
  /** Where the run's own verdicts disagree (see consistency.ts); a row with any is not a match. */
  readonly contradictions: readonly string[];
}

export interface RunOptions {
  /** Shorter runs (fewer seconds per row), as `--quick` and the CI smoke test use. */
  readonly quick: boolean;
  /** Only rows whose `backend/mode` passes (all rows when absent). */
  readonly only?: (backendMode: string) => boolean;
  /** Told of each row as it is measured (progress output). */
  readonly onRow?: (r: ScenarioResult) => void;
  /** Told of each row that could not run here (its adapter or a primitive missing), and why. */
  readonly onSkip?: (row: string, reason: string) => void;
}

export interface Scenario {
  readonly name: string;
  /** One sentence for the report: what the fault is and what it stands for in production. */
  readonly description: string;
  /** Every `backend/mode` row this scenario can produce, in order (for --help and planning). */
  readonly rows: readonly string[];
  /** Rows this scenario produces (one per backend/mode). Throws SkipError when it cannot run here. */
  run(opts: RunOptions): Promise<ScenarioResult[]>;
}

export class SkipError extends Error {}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A backend's class is a property of the backend, not of the scenario: a single PostgreSQL server
 * and a ZooKeeper or etcd quorum are linearizable (CP); Redis (async replication, RedLock's timing
 * assumptions) and Memcached (no replication at all) are AP.
 */
export function classOf(backend: string): ConsistencyClass {
  return backend === 'zookeeper' || backend === 'etcd' || backend === 'postgres' ? 'CP' : 'AP';
}

/** Imports an adapter package so it registers its scheme; a missing build is a skip, not a failure. */
export async function requireAdapter(pkg: string): Promise<void> {
  try {
    await import(pkg);
  } catch (error) {
    throw new SkipError(`${pkg} cannot be imported (${(error as Error).message.split('\n')[0]})`);
  }
}

/** The server fixtures, loaded only when a scenario runs (they pull in testcontainers). */
export async function servers(): Promise<typeof import('@deadbolt/conformance/servers')> {
  return import('@deadbolt/conformance/servers');
}

/**
 * Runs `runOne` for each wanted row, in order. A row whose adapter cannot be imported is skipped
 * (said on stderr) without skipping the others; SkipError when rows were wanted but none could run.
 */
export async function forEachRow<T extends { readonly backend: string; readonly mode: string; readonly pkg: string }>(
  scenario: string,
  rows: readonly T[],
  opts: RunOptions,
  runOne: (t: T) => Promise<ScenarioResult>,
): Promise<ScenarioResult[]> {
  const wanted = rows.filter((t) => opts.only?.(`${t.backend}/${t.mode}`) ?? true);
  // Filtered out entirely (--only, --quick): not run, and nothing to report.
  if (wanted.length === 0) return [];
  const out: ScenarioResult[] = [];
  const skipped: string[] = [];
  for (const t of wanted) {
    try {
      await requireAdapter(t.pkg);
    } catch (error) {
      if (error instanceof SkipError) {
        skipped.push(error.message);
        opts.onSkip?.(`${t.backend}/${t.mode}`, error.message);
        continue;
      }
      throw error;
    }
    let r: ScenarioResult;
    try {
      r = await runOne(t);
    } catch (error) {
      // A row the backend cannot run (a primitive it does not offer) skips that row only.
      if (error instanceof SkipError) {
        skipped.push(`${t.backend}/${t.mode}: ${error.message}`);
        opts.onSkip?.(`${t.backend}/${t.mode}`, error.message);
        continue;
      }
      throw error;
    }
    out.push(r);
    opts.onRow?.(r);
  }
  if (out.length === 0) throw new SkipError(skipped.join('; '));
  for (const reason of skipped) process.stderr.write(`${scenario}: row skipped, ${reason}\n`);
  return out;
}

/** Checks a history and states whether it matched the prediction `ok`. */
export function row(
  backend: string,
  mode: string,
  scenario: string,
  history: History,
  expectation: string,
  ok: (c: CheckResult) => boolean,
): ScenarioResult {
  const c = check(history);
  const disagree = contradictions(outcomeOf({ check: c }), c);
  // A run with no acquisitions shows nothing about the class: never call it a match.
  const matched = c.acquisitions > 0 && ok(c) && disagree.length === 0;
  return { backend, mode, class: classOf(backend), scenario, history, check: c, expectation, matched, contradictions: disagree };
}

/** SkipError unless the backend at `url` offers `capability` (a primitive it may not have yet). */
export async function requireCapability(url: string, capability: 'election' | 'readWrite' | 'semaphore'): Promise<void> {
  const { createLockClient } = await import('@deadbolt/core');
  const client = createLockClient({ url });
  try {
    const caps = (await client.capabilities()) as unknown as Record<string, unknown>;
    if (caps[capability] !== true) throw new SkipError(`the backend does not offer ${capability} (capabilities.${capability} is not true)`);
  } finally {
    await client.close();
  }
}
