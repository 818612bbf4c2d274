import type { RunOnceBackend } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { siblingKey } from './keys.js';
import { runScript } from './lua.js';

/** Run-once records (client.lastRun): a hash beside the job's lock key (lua/runs.ts). */
export function runRecordKey(key: string): string {
  return siblingKey(key, 'lastrun');
}

type Run = <T>(action: string, key: string, operation: () => Promise<T>) => Promise<T>;

/** saveRun and loadRun on `connection`, each through the backend's guarded `run` (typed errors, deadlines). */
export function runRecordsOn(connection: Redis | Cluster, run: Run): Required<Pick<RunOnceBackend, 'saveRun' | 'loadRun'>> {
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
