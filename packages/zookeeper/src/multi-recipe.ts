import { isOurs, newGuid, nodePrefix } from './naming.js';
import { CreateMode, getChildren, isInDoubt, isNoNode, mkdirp, request } from './operations.js';
import { awaitPredecessor, deleteNode, position, type HeldNode, type PredecessorStanding, type RecipeRun } from './recipe.js';

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

/** node-zookeeper-client's connection state: the zxid of the last reply header it read. */
interface WithLastZxid {
  readonly connectionManager?: { readonly zxid?: Buffer };
}

/** Our nodes, in the order of the runs, and their czxid when the multi's reply told it. */
export interface Contenders {
  readonly paths: string[];
  readonly czxid: Buffer | undefined;
}

/** How many paths are looked at at once after the multi: enough to fill the pipe, few enough to keep the library's queue short. */
const looksInFlight = 256;

function opDeadline(run: RecipeRun): number {
  return Date.now() + run.operationTimeoutMs;
}

async function deleteAll(runs: readonly RecipeRun[], paths: readonly string[]): Promise<void> {
  await Promise.all(paths.map((path, index) => deleteNode(runs[index]!, path)));
}

/** Our node under every path, created in one multi: all of them, or (on failure) none. */
export async function createContenders(runs: readonly RecipeRun[], deadline: number): Promise<Contenders> {
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
      // The reply header's zxid is the multi's transaction: every node's czxid (as createReturningZxid).
      let czxid: Buffer | undefined;
      try {
        const paths = await request<string[]>(
          'multi create',
          opDeadline(first),
          (done) =>
            transaction.commit((error: unknown, results: readonly CreateResult[] | undefined) => {
              if (error) return done(error);
              const zxid = (first.client as unknown as WithLastZxid).connectionManager?.zxid;
              czxid = Buffer.isBuffer(zxid) && zxid.length === 8 ? Buffer.from(zxid) : undefined;
              done(
                null,
                (results ?? []).map((result) => result.path ?? ''),
              );
            }),
          late,
          first.client,
        );
        return { paths: [...finish(paths)!], czxid };
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
        if (found.every((path) => path !== undefined)) return { paths: [...finish(found as string[])!], czxid: undefined };
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
    const { paths: ours, czxid } = await createContenders(runs, deadline);
    try {
      // Every path is looked at first, many at once (a look per path, one after another, was a
      // round trip per key: 5,000 keys took 3.3 s uncontended); then we wait where we are behind,
      // path by path. The order of the waits does not matter: the one multi already fixed our
      // place in every queue.
      const first = await lookAtAll(runs, ours, czxid);
      const held: HeldNode[] = [];
      for (const [index, run] of runs.entries()) {
        const path = ours[index]!;
        let where = first[index]!;
        for (;;) {
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
          where = await position(run, { path, czxid });
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

/** Where each of our nodes stands, with at most `looksInFlight` looks in flight. Without the czxid a look also stats our node. */
async function lookAtAll(runs: readonly RecipeRun[], ours: readonly string[], czxid: Buffer | undefined): Promise<PredecessorStanding[]> {
  const standings = new Array<PredecessorStanding>(runs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < runs.length) {
      const index = next++;
      standings[index] = await position(runs[index]!, { path: ours[index]!, czxid });
    }
  };
  await Promise.all(Array.from({ length: Math.min(looksInFlight, runs.length) }, worker));
  return standings;
}
