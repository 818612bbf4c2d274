import type { Event } from 'node-zookeeper-client';
import { request } from './operations.js';
import {
  deleteNode,
  listBeside,
  runContenderLoop,
  runLockRecipe,
  type Contender,
  type HeldNode,
  type RecipeRun,
  type Standing,
} from './recipe.js';

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
 * `permits` is recorded in the path node's data (permits-node.ts; Curator keeps nothing there): a
 * client passing another number is refused. Orphans: the lease create is protected, so a create applied but not
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

/**
 * The look inside the gate: list `leases` with a watch (see listBeside for our lease's czxid);
 * ours holds while there are at most `permits` leases, else it waits for the listing to change.
 */
async function leaseStanding(leasesRun: RecipeRun, ours: Contender, permits: number): Promise<Standing> {
  let fired!: () => void;
  const changed = new Promise<void>((resolve) => (fired = resolve));
  const listed = await listBeside(leasesRun, ours, () => watchChildren(leasesRun, leasesRun.lockPath, () => fired()));
  if (listed === undefined) return { kind: 'gone' };
  if (listed.children.length <= permits) return { kind: 'holds', czxid: listed.czxid };
  return { kind: 'behind', changed };
}

export async function runSemaphoreRecipe(
  run: RecipeRun,
  permits: number,
  wait: boolean,
  deadline: number,
  signal: AbortSignal | undefined,
  check: () => Promise<void> = async () => undefined,
): Promise<HeldNode | undefined> {
  const gateRun: RecipeRun = { ...run, lockPath: `${run.lockPath}/${locksChild}` };
  const gate = await runLockRecipe(gateRun, wait, deadline, signal);
  if (!gate) return undefined;
  try {
    const leasesRun: RecipeRun = { ...run, lockPath: `${run.lockPath}/${leasesChild}`, nodeName: leaseName };
    // The permits check (inside the gate) runs beside the lease's create; a refusal ends the wait.
    const refusal = new AbortController();
    let refused: { readonly error: unknown } | undefined;
    const checked = check().catch((error: unknown) => {
      refused = { error };
      refusal.abort();
    });
    // The caller's abort ends the wait too (AbortSignal.any needs Node 20.3; engines say >= 20).
    const forward = (): void => refusal.abort();
    if (signal?.aborted) forward();
    else signal?.addEventListener('abort', forward, { once: true });
    let held: HeldNode | undefined;
    try {
      held = await runContenderLoop(leasesRun, wait, deadline, refusal.signal, (ours) => leaseStanding(leasesRun, ours, permits));
    } finally {
      signal?.removeEventListener('abort', forward);
    }
    await checked;
    if (refused !== undefined) {
      if (held !== undefined) await deleteNode(leasesRun, held.path);
      throw refused.error;
    }
    return held;
  } finally {
    await deleteNode(gateRun, gate.path);
  }
}
