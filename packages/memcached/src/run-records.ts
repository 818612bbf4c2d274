import type { RunsDriver } from '@deadbolt/core/adapter';
import type memjs from 'memjs';
import { encodeKey } from './keys.js';
import { getWithCas, Opcode, request, setIfCas, Status, storeExtras } from './protocol.js';

/**
 * Run-once records (client.lastRun): one item beside the job's lock, `{ run, record }` as JSON, with
 * no expiry (memcached may still evict it, as any item). Its key ends in a NUL byte, which no lock key
 * has (core refuses NUL in keys), so it never meets a lock. A record that must replace a given run is
 * written with a CAS-guarded SET after reading it.
 */
export function runRecordKey(key: string): string {
  return encodeKey(`${key}\u0000lastrun`);
}

interface Item {
  readonly run: string;
  readonly record: string;
}

function parse(value: Buffer): Item | undefined {
  try {
    const item = JSON.parse(value.toString('utf8')) as Partial<Item>;
    return typeof item.run === 'string' && typeof item.record === 'string' ? { run: item.run, record: item.record } : undefined;
  } catch {
    return undefined;
  }
}

type Run = <T>(action: string, key: string, operation: () => Promise<T>) => Promise<T>;

/** saveRun and loadRun on the backend's connection, each through its guarded `run` (typed errors, deadlines). */
export function runRecordsOn(connection: () => memjs.Client, run: Run): RunsDriver {
  return {
    saveRun: (key, runId, record, replaces) =>
      run('runOnce', key, async () => {
        const value = JSON.stringify({ run: runId, record } satisfies Item);
        if (replaces === undefined) {
          const response = await request(connection(), Opcode.set, runRecordKey(key), storeExtras(0), value);
          if (response.status !== Status.ok) throw new Error(`memcached SET answered status 0x${response.status.toString(16)}`);
          return true;
        }
        const current = await getWithCas(connection(), runRecordKey(key));
        if (current === undefined || parse(current.value)?.run !== replaces) return false;
        return setIfCas(connection(), runRecordKey(key), value, 0, current.cas);
      }),
    loadRun: (key) =>
      run('lastRun', key, async () => {
        const current = await getWithCas(connection(), runRecordKey(key));
        return current === undefined ? undefined : parse(current.value)?.record;
      }),
  };
}
