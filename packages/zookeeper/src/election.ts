import type { Client } from 'node-zookeeper-client';
import { contenders, latchName, lockName } from './naming.js';
import { getChildren, isNoNode, request, stat } from './operations.js';
import { deleteNode, runLockRecipe, type HeldNode, type RecipeRun } from './recipe.js';

/**
 * Leader election, wire-compatible with Apache Curator (primitives.md §4.2):
 * - 'latch' (default), LeaderLatch: `<path>/_c_<uuid>-latch-<seq>`, EPHEMERAL_SEQUENTIAL, data = the
 *   participant id in UTF-8; the leader is the first by sequence (the text after `latch-`).
 * - 'selector', LeaderSelector: an InterProcessMutex on the path whose node data is the id, so its
 *   nodes are `_c_<uuid>-lock-<seq>`; the leader holds the mutex.
 * Both wait as the lock recipe does (a watch on the predecessor only). Before claiming, as
 * LeaderLatch.checkLeadership does, we check that our node's ephemeralOwner is our own session: a
 * node adopted after a connection loss may belong to a session that is gone (CURATOR-620's family
 * of double-leader bugs); such a node is deleted and we queue again.
 */
export type ElectionLayout = 'latch' | 'selector';

export function nodeNameOf(layout: string | undefined): string {
  return layout === 'selector' ? lockName : latchName;
}

/** Waits to lead: our node, first, owned by our session; or undefined after a give-up (node deleted). */
export async function runElectionRecipe(run: RecipeRun, deadline: number, signal: AbortSignal): Promise<HeldNode | undefined> {
  for (;;) {
    const ours = await runLockRecipe(run, true, deadline, signal);
    if (ours === undefined) return undefined;
    const own = await stat(run.client, ours.path, Date.now() + run.operationTimeoutMs);
    if (own?.ephemeralOwner.equals(run.client.getSessionId())) return ours;
    await deleteNode(run, ours.path);
    if (Date.now() >= deadline || signal.aborted) return undefined;
  }
}

/** The leader's participant id: the data of the first node by sequence (Curator getLeader()), or undefined. */
export async function readLeader(
  client: Client,
  path: string,
  layout: string | undefined,
  operationTimeoutMs: number,
): Promise<string | undefined> {
  // A leader that leaves between the listing and the read: list again (bounded, the next one is there).
  for (let attempt = 0; attempt < 5; attempt += 1) {
    let children: string[];
    try {
      children = await getChildren(client, path, Date.now() + operationTimeoutMs);
    } catch (error) {
      if (isNoNode(error)) return undefined;
      throw error;
    }
    const first = contenders(children, nodeNameOf(layout))[0];
    if (first === undefined) return undefined;
    try {
      const data = await request<Buffer | undefined>('getData', Date.now() + operationTimeoutMs, (done) =>
        client.getData(`${path}/${first}`, (error, found) => done(error, found ?? undefined)),
      );
      return data?.toString('utf8') ?? '';
    } catch (error) {
      if (!isNoNode(error)) throw error;
    }
  }
  return undefined;
}
