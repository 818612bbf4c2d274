/** What every scenario shares: the result row, skipping, and the adapter and server imports. */
import { check, type CheckResult } from './checker.js';
import type { History } from './history.js';

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

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A backend's class is a property of the backend, not of the scenario: a single PostgreSQL server
 * and a ZooKeeper quorum are linearizable (CP); Redis (async replication, RedLock's timing
 * assumptions) and Memcached (no replication at all) are AP.
 */
export function classOf(backend: string): ConsistencyClass {
  return backend === 'zookeeper' || backend === 'postgres' ? 'CP' : 'AP';
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

/** Checks a history and states whether it matched the prediction `ok`. */
export function row(backend: string, mode: string, scenario: string, history: History, expectation: string, ok: (c: CheckResult) => boolean): ScenarioResult {
  const c = check(history);
  // A run with no acquisitions shows nothing about the class: never call it a match.
  return { backend, mode, class: classOf(backend), scenario, history, check: c, expectation, matched: c.acquisitions > 0 && ok(c) };
}
