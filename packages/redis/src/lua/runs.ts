/**
 * Run-once records (client.lastRun): a hash beside the job's lock key, in its cluster slot, with the
 * run's id and the record's text. No expiry: the last run is kept as ShedLock keeps its row. With
 * redlock it lives on the first master only: a record is a status line, not part of the exclusion.
 */
export const saveRunLua = `-- KEYS[1] record hash; ARGV[1] run id, ARGV[2] record, ARGV[3] the run id it must replace ('' = any)
if ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'run') ~= ARGV[3] then
  return 0
end
redis.call('HSET', KEYS[1], 'run', ARGV[1], 'record', ARGV[2])
return 1
`;
