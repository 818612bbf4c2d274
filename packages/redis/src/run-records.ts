import type { RunsDriver } from '@deadbolt/core/adapter';
import type { CallGuard } from './guard.js';
import type { Cluster, Redis } from 'ioredis';
import { siblingKey } from './keys.js';
import { runScript } from './lua.js';

/** Run-once records (client.lastRun): a hash beside the job's lock key (lua/runs.ts). */
export function runRecordKey(key: string): string {
  return siblingKey(key, 'lastrun');
}

/** The runs driver: saveRun and loadRun on `connection`, each through the call guard (typed errors, deadlines). */
export function runsDriver(connection: Redis | Cluster, guard: CallGuard): RunsDriver {
  const run = guard.run.bind(guard);
  return {
    saveRun: (key, runId, record, replaces) =>
      run(
        'runOnce',
        key,
        async () => Number(await runScript(connection, 'save-run', [runRecordKey(key)], [runId, record, replaces ?? ''])) === 1,
      ),
    loadRun: (key) => run('lastRun', key, async () => (await connection.hget(runRecordKey(key), 'record')) ?? undefined),
  };
}
