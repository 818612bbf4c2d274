import { isOurs, newGuid, nodePrefix } from './naming.js';
import { CreateMode, getChildren, isInDoubt, isNoNode, mkdirp, request } from './operations.js';
import { awaitPredecessor, deleteNode, position, type HeldNode, type RecipeRun } from './recipe.js';

/**
 * Multi-lock on ZooKeeper (primitives.md §4.1). One `multi` request creates our contender node under
 * every lock path. ZooKeeper applies a multi atomically, at one point of its total order, so any two
 * multi-lock acquirers stand in the same relative order in every queue they share: no cycle of
 * waiters can form, and enqueueing costs one round trip (Curator's InterProcessMultiLock takes the
 * locks one by one in list order and can deadlock on opposite orders). Then we wait path by path,
 * with the ordinary recipe's predecessor watch. Nodes carry one protection guid (Curator's
 * `_c_<uuid>-lock-`), so a multi in doubt is found again by listing, and a late one is deleted.
 */

interface CreateResult {
  readonly path?: string;
}

function opDeadline(run: RecipeRun): number {
  return Date.now() + run.operationTimeoutMs;
}

async function deleteAll(runs: readonly RecipeRun[], paths: readonly string[]): Promise<void> {
  await Promise.all(paths.map((path, index) => deleteNode(runs[index]!, path)));
}

/** Our node under every path, created in one multi: all of them, or (on failure) none. */
export async function createContenders(runs: readonly RecipeRun[], deadline: number): Promise<string[]> {
  const first = runs[0]!;
  const guid = newGuid();
  let adopted: readonly string[] | undefined;
  let finished = false;
  const strays: string[][] = [];
  const late = (paths: string[]): void => {
    if (!finished) strays.push(paths);
    else if (adopted === undefined || adopted[0] !== paths[0]) void deleteAll(runs, paths);
  };
  const finish = (paths: readonly string[] | undefined): readonly string[] | undefined => {
    adopted = paths;
    finished = true;
    for (const stray of strays) if (paths === undefined || stray[0] !== paths[0]) void deleteAll(runs, stray);
    return paths;
  };
  let lastError: unknown;
  // As in the single-lock create: once we made the parents, the multi is tried again whatever the
  // deadline (a tryAcquire's deadline is now, and a concurrent parent sweep made every first try of
  // it fail with NO_NODE, which says nothing true about the locks).
  let parentsJustMade = false;
  try {
    for (let attempt = 0; attempt === 0 || parentsJustMade || Date.now() < deadline; attempt += 1) {
      parentsJustMade = false;
      const transaction = first.client.transaction();
      for (const run of runs) transaction.create(nodePrefix(run.lockPath, guid, run.nodeName), run.data, CreateMode.EPHEMERAL_SEQUENTIAL);
      try {
        const paths = await request<string[]>(
          'multi create',
          opDeadline(first),
          (done) =>
            transaction.commit((error: unknown, results: readonly CreateResult[] | undefined) =>
              error
                ? done(error)
                : done(
                    null,
                    (results ?? []).map((result) => result.path ?? ''),
                  ),
            ),
          late,
        );
        return [...finish(paths)!];
      } catch (error) {
        lastError = error;
        if (isNoNode(error)) {
          // Some lock's parent does not exist yet: create them all, then retry the multi.
          await Promise.all(
            runs.map((run) =>
              mkdirp(run.client, run.lockPath, opDeadline(run)).catch((mkdirError: unknown) => {
                if (!isInDoubt(mkdirError)) throw mkdirError;
              }),
            ),
          );
          parentsJustMade = attempt < 3;
          continue;
        }
        if (!isInDoubt(error)) throw error;
        // All or nothing: if our node is under the first path, the multi was applied everywhere.
        const found = await Promise.all(
          runs.map(async (run) => {
            const children = await getChildren(run.client, run.lockPath, opDeadline(run)).catch(() => [] as string[]);
            const ours = children.find((child) => isOurs(child, guid));
            return ours === undefined ? undefined : `${run.lockPath}/${ours}`;
          }),
        );
        if (found.every((path) => path !== undefined)) return [...finish(found as string[])!];
      }
    }
    throw lastError;
  } finally {
    if (!finished) finish(undefined);
  }
}

/**
 * The whole multi-lock: enqueue everywhere in one multi, then wait until our node is first under
 * each path in turn. Resolves with every node (path and stat), or undefined after a give-up, when
 * every node of ours has been deleted.
 */
export async function runMultiLockRecipe(
  runs: readonly RecipeRun[],
  deadline: number,
  signal: AbortSignal,
  onQueued?: () => void,
): Promise<HeldNode[] | undefined> {
  for (;;) {
    const ours = await createContenders(runs, deadline);
    try {
      const held: HeldNode[] = [];
      for (const [index, run] of runs.entries()) {
        const path = ours[index]!;
        for (;;) {
          // No czxid from a multi's reply per node: the look stats our node (one czxid for all, one transaction).
          const where = await position(run, { path, czxid: undefined });
          if (where.kind === 'gone') break; // the session ended: start over with new nodes
          if (where.kind === 'holds') {
            held.push({ path, czxid: where.czxid });
            break;
          }
          if (Date.now() >= deadline || signal.aborted) {
            await deleteAll(runs, ours);
            return undefined;
          }
          onQueued?.();
          const outcome = await awaitPredecessor(run, path, where.watch, deadline, signal);
          if (outcome !== 'changed') {
            await deleteAll(runs, ours);
            return undefined;
          }
          run.hooks.onRecheck?.(run.lockPath, path);
        }
        if (held.length !== index + 1) break;
      }
      if (held.length === runs.length) return held;
      await deleteAll(runs, ours);
    } catch (error) {
      await deleteAll(runs, ours);
      throw error;
    }
    if (Date.now() >= deadline) return undefined;
  }
}
