import type { RunOnceBackend } from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { siblingKey } from './keys.js';

/**
 * Run-once records (client.lastRun): a hash beside the job's lock key, in its cluster slot, with the
 * run's id and the record's text. No expiry: the last run is kept as ShedLock keeps its row. With
 * redlock it lives on the first master only: a record is a status line, not part of the exclusion.
 */
const saveRunLua = `-- KEYS[1] record hash; ARGV[1] run id, ARGV[2] record, ARGV[3] the run id it must replace ('' = any)
if ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'run') ~= ARGV[3] then
  return 0
end
redis.call('HSET', KEYS[1], 'run', ARGV[1], 'record', ARGV[2])
return 1
`;

export function runRecordKey(key: string): string {
  return siblingKey(key, 'lastrun');
}

type Run = <T>(action: string, key: string, operation: () => Promise<T>) => Promise<T>;

/** saveRun and loadRun on `connection`, each through the backend's guarded `run` (typed errors, deadlines). */
export function runRecordsOn(connection: Redis | Cluster, run: Run): Required<Pick<RunOnceBackend, 'saveRun' | 'loadRun'>> {
  return {
    saveRun: (key, runId, record, replaces) =>
      run('runOnce', key, async () => Number(await connection.eval(saveRunLua, 1, runRecordKey(key), runId, record, replaces ?? '')) === 1),
    loadRun: (key) => run('lastRun', key, async () => (await connection.hget(runRecordKey(key), 'record')) ?? undefined),
  };
}
