import type { Event, Stat } from 'node-zookeeper-client';
import { baseName } from './naming.js';
import { request, stat } from './operations.js';
import { createContender, deleteNode, runLockRecipe, type GiveUp, type RecipeRun } from './recipe.js';

/**
 * Apache Curator's InterProcessSemaphoreV2, node for node (InterProcessSemaphoreV2.java), so a
 * Curator semaphore and a Deadbolt one on the same path share their permits:
 * - `<path>/locks` holds an InterProcessMutex (`_c_<uuid>-lock-<seq>`): acquirers pass it one at a
 *   time, in arrival order, and only the one inside looks at the leases;
 * - inside, it creates `<path>/leases/_c_<uuid>-lease-<seq>` (EPHEMERAL_SEQUENTIAL, protected) and
 *   lists `leases` with a watch: it holds a permit once there are at most `permits` children (every
 *   child counts, as in Curator), else it waits for the listing to change, still holding the mutex;
 * - then it releases the mutex. A release deletes the lease node, which fires the watch of the one
 *   waiter inside the mutex: one release admits exactly one waiter, with no herd.
 * `permits` is not stored in ZooKeeper (Curator's maxLeases neither): every client of a path must
 * pass the same number. Orphans: the lease create is protected, so a create applied but not
 * answered is found by its guid (createContender), and a give-up deletes the node (CURATOR-315/462).
 */
export const locksChild = 'locks';
export const leasesChild = 'leases';
export const leaseName = 'lease-';

function watchChildren(run: RecipeRun, path: string, watcher: (event: Event) => void): Promise<string[]> {
  return request<string[]>('getChildren', Date.now() + run.operationTimeoutMs, (done) =>
    run.client.getChildren(path, watcher, (error, children) => done(error, children)),
  );
}

export async function runSemaphoreRecipe(
  run: RecipeRun,
  permits: number,
  wait: boolean,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<{ readonly path: string; readonly stat: Stat } | undefined> {
  const gateRun: RecipeRun = { ...run, lockPath: `${run.lockPath}/${locksChild}` };
  const gate = await runLockRecipe(gateRun, wait, deadline, signal);
  if (!gate) return undefined;
  try {
    const leasesRun: RecipeRun = { ...run, lockPath: `${run.lockPath}/${leasesChild}`, nodeName: leaseName };
    for (;;) {
      const ours = await createContender(leasesRun, deadline);
      try {
        for (;;) {
          let fired!: () => void;
          const changed = new Promise<void>((resolve) => (fired = resolve));
          const [children, own] = await Promise.all([
            watchChildren(leasesRun, leasesRun.lockPath, () => fired()),
            stat(run.client, ours, Date.now() + run.operationTimeoutMs),
          ]);
          if (own === undefined || !children.includes(baseName(ours))) break; // the session lost our node: a new one
          if (children.length <= permits) return { path: ours, stat: own };
          if (!wait || Date.now() >= deadline || signal?.aborted) {
            await deleteNode(leasesRun, ours);
            return undefined;
          }
          run.onQueued?.();
          const outcome = await until(changed, run.sessionEnded, deadline, signal);
          if (outcome !== 'changed') {
            await deleteNode(leasesRun, ours);
            return undefined;
          }
          run.hooks.onRecheck?.(leasesRun.lockPath, ours);
        }
      } catch (error) {
        await deleteNode(leasesRun, ours);
        throw error;
      }
      if (!wait || Date.now() >= deadline) return undefined;
    }
  } finally {
    await deleteNode(gateRun, gate.path);
  }
}

/** The watch firing, or the reason to stop waiting for it (rejects when the session ends). */
async function until(
  changed: Promise<void>,
  sessionEnded: AbortSignal,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<'changed' | GiveUp> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  let onEnded: (() => void) | undefined;
  try {
    return await Promise.race<'changed' | GiveUp>([
      changed.then(() => 'changed' as const),
      new Promise<never>((_resolve, reject) => {
        onEnded = () => reject(new Error('the ZooKeeper session ended while waiting for a permit'));
        if (sessionEnded.aborted) onEnded();
        else sessionEnded.addEventListener('abort', onEnded, { once: true });
      }),
      new Promise<GiveUp>((resolve) => {
        timer = setTimeout(() => resolve('deadline'), Math.max(0, deadline - Date.now()));
      }),
      new Promise<GiveUp>((resolve) => {
        onAbort = () => resolve('aborted');
        if (signal?.aborted) onAbort();
        else signal?.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    if (onEnded) sessionEnded.removeEventListener('abort', onEnded);
  }
}
