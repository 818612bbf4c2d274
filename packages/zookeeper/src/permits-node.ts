import { InvalidArgumentError } from '@deadbolt/core/adapter';
import { getDataAndStat, isBadVersion, isNoNode, setDataAt } from './operations.js';
import type { RecipeRun } from './recipe.js';

/**
 * A semaphore's `permits`, recorded in the data of its path node (`<path>`, parent of `locks` and
 * `leases`) as `deadbolt-permits=<n>`, so a client passing another number for a semaphore in use is
 * refused with InvalidArgumentError. Curator-compatible: InterProcessSemaphoreV2 keeps nothing in
 * that node's data (it creates it as an empty container parent; a SharedCount-driven maxLeases lives
 * at a path of the caller's choosing), and it never reads the data. We write only into EMPTY data
 * (setData guarded by the version we read), and data that is not our record is left alone and not
 * judged, so nothing of anyone else's is overwritten or misread. Checked inside the semaphore's gate
 * mutex (acquirers pass one at a time, and the path cannot be swept while our gate node is under
 * it), so two clients with different numbers cannot both record theirs. When the semaphore is idle
 * its path is swept, and the next acquirer records a new number.
 */
const recordPrefix = 'deadbolt-permits=';

export async function checkPermits(run: RecipeRun, key: string, permits: number, backend: string): Promise<void> {
  const deadline = (): number => Date.now() + run.operationTimeoutMs;
  // A few rounds: a setData that loses to another writer (BAD_VERSION) reads again.
  for (let round = 0; round < 3; round += 1) {
    const found = await getDataAndStat(run.client, run.lockPath, deadline());
    if (found === undefined) return; // no path node: nothing recorded, and nothing to record into
    if (found.data.length === 0) {
      try {
        await setDataAt(run.client, run.lockPath, Buffer.from(`${recordPrefix}${permits}`, 'utf8'), found.stat.version, deadline());
        return;
      } catch (error) {
        if (isBadVersion(error)) continue;
        if (isNoNode(error)) return;
        throw error;
      }
    }
    const text = found.data.toString('utf8');
    if (!text.startsWith(recordPrefix)) return; // not ours: not judged
    const recorded = Number(text.slice(recordPrefix.length));
    if (recorded !== permits) {
      throw new InvalidArgumentError(
        'permits',
        `the semaphore is in use with ${recorded} permits, not ${permits}; every client of one key must pass the same permits`,
        { key, backend },
      );
    }
    return;
  }
}
