import { InvalidArgumentError, type LockClient } from '@deadbolt/core';
import { type TickOptions, validateTick } from './options.js';
import { runTick } from './tick.js';

/** node-cron 4's RunCoordinator, structurally (`setRunCoordinator` or a task's `runCoordinator`). */
export interface RunCoordinator {
  shouldRun(key: string, ttlMs: number): Promise<boolean>;
  onComplete(key: string): Promise<void>;
}

/** The options of the coordinator: those of a tick; node-cron's `distributedLease` is not used. */
export type CoordinatorOptions = Omit<TickOptions, 'onSkip'>;

/**
 * node-cron 4's distributed hook backed by `locks.runOnce`: a `distributed: true` task (with a
 * `name`) runs on one replica per tick. node-cron asks `shouldRun(key)` with the key
 * `<name>:<tick as ISO>`, runs the task when told yes, then calls `onComplete(key)`. The claim is on
 * the task's name (one lock and one `lastRun` record per job) with the hold anchored at the tick's
 * scheduled time. runOnce wraps a function, the hook splits it in two: `shouldRun` answers yes once
 * the claim is won and the run is open; `onComplete` closes it, writes the record and shortens the
 * hold. node-cron does not tell the hook whether the task failed, so `lastRun` says 'ok' for a failed
 * run; wrap the task with runTick when the outcome matters. Skips show as node-cron's
 * `execution:skipped` event ('not-elected'); a failed claim is its 'coordinator-error' (fail-closed).
 */
export function runCoordinator(locks: LockClient, options: CoordinatorOptions): RunCoordinator {
  validateTick('node-cron', () => undefined, options);
  const open = new Map<string, { close(): void; settled: Promise<unknown> }>();
  return {
    async shouldRun(key) {
      const { name, scheduledAt } = parseKey(key);
      return new Promise<boolean>((resolve, reject) => {
        let close = (): void => undefined;
        const closed = new Promise<void>((done) => {
          close = done;
        });
        const settled = runTick(
          locks,
          name,
          scheduledAt,
          () => {
            resolve(true);
            return closed;
          },
          options,
        );
        open.set(key, { close, settled });
        settled.then(
          (result) => {
            if (!result.ran) {
              open.delete(key);
              resolve(false);
            }
          },
          (error: unknown) => {
            open.delete(key);
            reject(error);
          },
        );
      });
    },
    async onComplete(key) {
      const run = open.get(key);
      if (run === undefined) return;
      open.delete(key);
      run.close();
      await run.settled;
    },
  };
}

/** node-cron's key is `<task name>:<tick>`, the tick as `Date#toISOString()` (24 characters). */
function parseKey(key: string): { name: string; scheduledAt: Date } {
  const iso = key.slice(-24);
  const scheduledAt = new Date(iso);
  const name = key.slice(0, -25);
  if (key.at(-25) !== ':' || name.length === 0 || Number.isNaN(scheduledAt.getTime()) || scheduledAt.toISOString() !== iso) {
    throw new InvalidArgumentError('key', `node-cron's coordination key ${JSON.stringify(key)} is not "<name>:<ISO time>"`, {
      backend: 'schedule',
    });
  }
  return { name, scheduledAt };
}
