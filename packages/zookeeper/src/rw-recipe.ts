import { baseName } from './naming.js';
import { CreateMode } from './operations.js';
import { listBeside, runContenderLoop, type Contender, type HeldNode, type PredecessorStanding, type RecipeRun } from './recipe.js';

/**
 * Apache Curator's InterProcessReadWriteLock, node for node (InterProcessReadWriteLock.java,
 * StandardLockInternalsDriver.java), so Java services on Curator and Node services on Deadbolt share
 * one lock path:
 * - nodes directly under the lock path, `_c_<uuid>-__READ__<seq>` and `_c_<uuid>-__WRIT__<seq>`
 *   (Curator's constants READ_LOCK_NAME / WRITE_LOCK_NAME: "__WRIT__", not "__WRITE__"),
 *   EPHEMERAL_SEQUENTIAL, ordered by the text after the last marker (the sequence);
 * - a writer holds when it is first among all of them; a reader when no writer sorts before it;
 * - downgrade as since CURATOR-621: the write holder's read node is EPHEMERAL and carries the
 *   writer's own sequence, so it sorts ahead of every queued writer and keeps them out after the
 *   write node goes.
 * One difference that interop cannot see: a waiting reader watches the nearest writer before it,
 * not the first one (writers ahead leave in order, so the nearest leaves last: one wake-up, not one
 * per writer ahead).
 */
export const readMarker = '__READ__';
export const writeMarker = '__WRIT__';

/** Curator's fixForSorting for the read-write lock: the text after the last `__READ__`, else after the last `__WRIT__`. */
export function readWriteSortKey(child: string): string {
  for (const marker of [readMarker, writeMarker]) {
    const index = child.lastIndexOf(marker);
    if (index >= 0) return child.slice(index + marker.length);
  }
  return child;
}

/** The read-write contenders under a lock path, in order (a mutex's `lock-` nodes are not among them). */
export function readWriteContenders(children: readonly string[]): string[] {
  return children
    .filter((child) => child.includes(readMarker) || child.includes(writeMarker))
    .map((child) => [readWriteSortKey(child), child] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, child]) => child);
}

export type ReadWriteMode = 'read' | 'write';

async function position(run: RecipeRun, ours: Contender, mode: ReadWriteMode, downgrade: boolean): Promise<PredecessorStanding> {
  const listed = await listBeside(run, ours);
  if (listed === undefined) return { kind: 'gone' };
  const sorted = readWriteContenders(listed.children);
  const index = sorted.indexOf(baseName(ours.path));
  if (index < 0) return { kind: 'gone' };
  const holds = { kind: 'holds', czxid: listed.czxid } as const;
  // The downgrade's read holds beside our own write hold (Curator: the write mutex is the current thread's).
  if (downgrade) return holds;
  if (mode === 'write') return index === 0 ? holds : { kind: 'behind', watch: `${run.lockPath}/${sorted[index - 1]}` };
  for (let i = index - 1; i >= 0; i -= 1) {
    if (sorted[i]!.includes(writeMarker)) return { kind: 'behind', watch: `${run.lockPath}/${sorted[i]}` };
  }
  return holds;
}

/**
 * The whole read-write recipe: the mutex's contender loop (recipe.ts) with the read-write look.
 * `wait` false is tryAcquire. `downgradeOf`: the path of this owner's write node, for a read taken beside it.
 */
export function runReadWriteRecipe(
  run: RecipeRun,
  mode: ReadWriteMode,
  downgradeOf: string | undefined,
  wait: boolean,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<HeldNode | undefined> {
  const naming: Pick<RecipeRun, 'nodeName' | 'createMode'> =
    downgradeOf !== undefined
      ? { nodeName: `${readMarker}${readWriteSortKey(baseName(downgradeOf))}`, createMode: CreateMode.EPHEMERAL }
      : { nodeName: mode === 'read' ? readMarker : writeMarker };
  return runContenderLoop({ ...run, ...naming }, wait, deadline, signal, (ours) => position(run, ours, mode, downgradeOf !== undefined));
}
