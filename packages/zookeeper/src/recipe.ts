import { onAbort } from '@deadbolt/core/adapter';
import type { Client, Event } from 'node-zookeeper-client';
import { baseName, isOurs, newGuid, nodePrefix, predecessorOf } from './naming.js';
import { sharedGetChildren, sharedMkdirp } from './shared-listing.js';
import { afterMs, CreateMode, createReturningZxid, getChildren, isInDoubt, isNoNode, remove, stat, watchData } from './operations.js';

/**
 * The lock recipe of the ZooKeeper docs ("Locks", zookeeper.apache.org/doc/current/recipes.html)
 * as Apache Curator implements it (LockInternals.attemptLock / internalLockLoop): create an
 * EPHEMERAL_SEQUENTIAL node, list the children, hold if ours sorts first, else watch only the
 * next-lower node (no herd effect: one release wakes one waiter) and check again when it changes.
 */

/** Observability for tests and metrics: which node a waiter watches, and each re-check it makes. */
export interface RecipeHooks {
  readonly onWatch?: (lockPath: string, ours: string, watched: string) => void;
  readonly onRecheck?: (lockPath: string, ours: string) => void;
}

export interface RecipeRun {
  readonly client: Client;
  readonly lockPath: string;
  readonly data: Buffer;
  readonly operationTimeoutMs: number;
  readonly hooks: RecipeHooks;
  /** Aborts when the session ends: our node is gone with it, so waiting on is pointless. */
  readonly sessionEnded: AbortSignal;
  /** A node we could not delete (the request timed out): the backend retries it later. */
  readonly abandon: (path: string) => void;
  /** Told each time we queue behind another contender (core reports the first as 'contended'). */
  readonly onQueued?: () => void;
  /** The node's base name after `_c_<guid>-`: `lock-` (default, Curator's mutex), `latch-` (LeaderLatch), `__READ__`, `__WRIT__`, `lease-`. */
  readonly nodeName?: string;
  /** EPHEMERAL_SEQUENTIAL unless given (a downgrade's read node is EPHEMERAL, named with the writer's sequence). */
  readonly createMode?: number;
}

/** Why a wait ended without the lock. */
export type GiveUp = 'deadline' | 'aborted';

function opDeadline(run: RecipeRun): number {
  return Date.now() + run.operationTimeoutMs;
}

/** Best-effort delete of our node; on failure the backend keeps trying (nothing left behind). */
export async function deleteNode(run: RecipeRun, path: string): Promise<void> {
  try {
    await remove(run.client, path, opDeadline(run));
  } catch (error) {
    if (!isNoNode(error)) run.abandon(path);
  }
}

/** Our node: its path, and its czxid when the create's reply told it (a node found by its guid after an in-doubt create has none yet). */
export interface Contender {
  readonly path: string;
  readonly czxid: Buffer | undefined;
  /** Made by the first create sent (no retry, no in-doubt search): a listing sent right after that create sees it. */
  readonly firstSend?: boolean;
}

/** Our node once it holds: the fence is its czxid. */
export interface HeldNode {
  readonly path: string;
  readonly czxid: Buffer;
}

/**
 * Creates our contender node with Curator's protection: the name carries a guid, so after a
 * CONNECTION_LOSS (or our own deadline) on create, a listing tells whether the create was applied
 * (Curator's CreateBuilderImpl.findProtectedNodeInForeground). A reply that arrives after we
 * stopped waiting, for a node we did not adopt, is deleted.
 */
export async function createContender(run: RecipeRun, deadline: number, afterFirstSend?: () => void): Promise<Contender> {
  const guid = newGuid();
  const prefix = nodePrefix(run.lockPath, guid, run.nodeName);
  let adopted: string | undefined;
  let finished = false;
  // Replies that came after we stopped waiting for them: rare, so made only when one does.
  let strays: Set<string> | undefined;
  const late = (path: string): void => {
    if (finished && path !== adopted) void deleteNode(run, path);
    else (strays ??= new Set()).add(path);
  };
  const finish = (path: string | undefined): void => {
    adopted = path;
    finished = true;
    if (strays !== undefined) for (const stray of strays) if (stray !== path) void deleteNode(run, stray);
  };
  let lastError: unknown;
  // After we made the parent, the create is tried once more whatever the deadline: under load (500
  // first-time keys at once) the mkdirp alone could outlast it, and the caller then got the
  // create's NO_NODE, which says nothing true about the server.
  let parentJustMade = false;
  try {
    for (let attempt = 0; attempt === 0 || parentJustMade || Date.now() < deadline; attempt += 1) {
      parentJustMade = false;
      try {
        const sending = createReturningZxid(
          run.client,
          prefix,
          run.data,
          run.createMode ?? CreateMode.EPHEMERAL_SEQUENTIAL,
          opDeadline(run),
          (node) => late(node.path),
        );
        // The create is on the wire (node-zookeeper-client queues it synchronously): what the caller
        // sends now is answered after it.
        if (attempt === 0) afterFirstSend?.();
        const created = await sending;
        finish(created.path);
        return attempt === 0 ? { path: created.path, czxid: created.czxid, firstSend: true } : created;
      } catch (error) {
        lastError = error;
        if (isNoNode(error)) {
          // The lock's parent does not exist yet (or was just cleaned up): create it, then retry.
          await sharedMkdirp(run.client, run.lockPath, run.operationTimeoutMs).catch((mkdirError: unknown) => {
            if (!isInDoubt(mkdirError)) throw mkdirError;
          });
          parentJustMade = attempt < 3;
          continue;
        }
        if (!isInDoubt(error)) throw error;
        const children = await getChildren(run.client, run.lockPath, opDeadline(run)).catch(() => [] as string[]);
        const ours = children.find((child) => isOurs(child, guid));
        if (ours !== undefined) {
          const path = `${run.lockPath}/${ours}`;
          finish(path);
          return { path, czxid: undefined };
        }
      }
    }
    throw lastError;
  } finally {
    if (!finished) finish(undefined);
  }
}

/**
 * Where our node stands after a look at its siblings: it holds (with its czxid, the fence),
 * it waits for `watch` (the node before it) to change, it waits for `changed` (a watch the look
 * itself set: the semaphore's listing of its leases), or it is gone (the session ended).
 */
export type Standing = PredecessorStanding | { readonly kind: 'behind'; readonly changed: Promise<void> };

/** A mutex's (or a read-write lock's) standing: it waits only ever on the node before it. */
export type PredecessorStanding =
  | { readonly kind: 'holds'; readonly czxid: Buffer }
  | { readonly kind: 'behind'; readonly watch: string }
  | { readonly kind: 'gone' };

/**
 * Lists `run.lockPath` (with `list`, default a plain getChildren) and, if the create's reply did not
 * give our czxid, stats our node in the same round trip (the two requests go out together).
 * Undefined when our node is gone (the session lost it).
 */
export async function listBeside(
  run: RecipeRun,
  ours: Contender,
  list: () => Promise<string[]> = () => sharedGetChildren(run.client, run.lockPath, run.operationTimeoutMs),
): Promise<{ readonly children: string[]; readonly czxid: Buffer } | undefined> {
  if (ours.czxid !== undefined) {
    const children = await list();
    return children.includes(baseName(ours.path)) ? { children, czxid: ours.czxid } : undefined;
  }
  const [children, own] = await Promise.all([list(), stat(run.client, ours.path, opDeadline(run))]);
  return own !== undefined && children.includes(baseName(ours.path)) ? { children, czxid: own.czxid } : undefined;
}

/**
 * The mutex's look: ours holds when it sorts first among the contenders, else it watches the one
 * before it. `listing`: children already asked for (sent after our create), instead of a new request.
 */
export async function position(run: RecipeRun, ours: Contender, listing?: Promise<string[]>): Promise<PredecessorStanding> {
  if (ours.czxid !== undefined) {
    // The fence is known (the create's reply): one pass over the listing, which predecessorOf makes
    // anyway and which also tells whether ours is listed (listBeside would scan it once more).
    const children = await (listing ?? sharedGetChildren(run.client, run.lockPath, run.operationTimeoutMs));
    return standing(run, predecessorOf(children, baseName(ours.path), run.nodeName), ours.czxid);
  }
  const listed = await listBeside(run, ours, listing === undefined ? undefined : () => listing);
  if (listed === undefined) return { kind: 'gone' };
  return standing(run, predecessorOf(listed.children, baseName(ours.path), run.nodeName), listed.czxid);
}

/** predecessorOf's answer as a standing: not listed (gone), first (holds), or behind the node before it. */
function standing(run: RecipeRun, before: string | null | undefined, czxid: Buffer): PredecessorStanding {
  if (before === undefined) return { kind: 'gone' };
  if (before === null) return { kind: 'holds', czxid };
  return { kind: 'behind', watch: `${run.lockPath}/${before}` };
}

/**
 * Waits for `predecessor` to change (deleted, normally). Resolves 'changed' (re-check), or the
 * reason to give up. The server-side watch outlives a give-up until the predecessor changes
 * (node-zookeeper-client has no removeWatches); its callback is then a no-op. One promise settled by
 * whichever comes first (no race of four promises and a Node timer per wait: that was a tenth of the
 * adapter's time per hand-off at 10 workers on one key).
 */
export function awaitPredecessor(
  run: RecipeRun,
  ours: string,
  predecessor: string,
  deadline: number,
  signal: AbortSignal,
): Promise<'changed' | GiveUp> {
  return new Promise<'changed' | GiveUp>((resolve, reject) => {
    let waiting: Waiting | undefined;
    let fired = false;
    watchData(
      run.client,
      predecessor,
      (_event: Event) => {
        fired = true;
        waiting?.settle('changed');
      },
      opDeadline(run),
    ).then(
      () => {
        run.hooks.onWatch?.(run.lockPath, ours, predecessor);
        if (fired) resolve('changed');
        else waiting = new Waiting(run, deadline, signal, resolve, reject);
      },
      (error: unknown) => (isNoNode(error) ? resolve('changed') : reject(error)),
    );
  });
}

/** A watch firing, or the reason to stop waiting for it (rejects when the session ends: our node is gone with it). */
export function untilChanged(run: RecipeRun, changed: Promise<void>, deadline: number, signal: AbortSignal): Promise<'changed' | GiveUp> {
  return new Promise<'changed' | GiveUp>((resolve, reject) => {
    const waiting = new Waiting(run, deadline, signal, resolve, reject);
    changed.then(
      () => waiting.settle('changed'),
      (error: unknown) => waiting.fail(error),
    );
  });
}

/**
 * One wait's way out other than its watch: the deadline (on the session's deadline wheel, not a Node
 * timer each), the caller's abort, and the end of the session (an error: our node is gone with it).
 * Whichever comes first settles it and unhooks the others.
 */
class Waiting {
  private settled = false;
  private readonly timer: { cancel(): void };
  private readonly stopAbort: () => void;
  private readonly stopEnded: () => void;

  constructor(
    run: RecipeRun,
    deadline: number,
    signal: AbortSignal,
    private readonly resolve: (outcome: 'changed' | GiveUp) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.timer = afterMs(run.client, Math.max(0, deadline - Date.now()), () => this.settle('deadline'));
    this.stopEnded = onAbortOf(run.sessionEnded, () => this.fail(new Error('the ZooKeeper session ended while waiting for the lock')));
    this.stopAbort = onAbortOf(signal, () => this.settle('aborted'));
    // Settled from inside (an already aborted signal): what was hooked after that is unhooked now.
    if (this.settled) {
      this.stopEnded();
      this.stopAbort();
    }
  }

  settle(outcome: 'changed' | GiveUp): void {
    if (this.finish()) this.resolve(outcome);
  }

  fail(error: unknown): void {
    if (this.finish()) this.reject(error);
  }

  private finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    // Set in the constructor; a listener can fire from inside it (an aborted signal), before they exist.
    this.timer?.cancel();
    this.stopAbort?.();
    this.stopEnded?.();
    return true;
  }
}

/**
 * The kit's onAbort (one 'abort' listener per signal, fanning out to a Set: a crowd of waiters
 * shares the session's signal), calling `listener` at once if the signal has already aborted.
 */
function onAbortOf(signal: AbortSignal, listener: () => void): () => void {
  if (!signal.aborted) return onAbort(signal, listener);
  listener();
  return () => undefined;
}

/** The signal of a wait nobody can abort (tryAcquire, renew): one for all, not one per call. */
const never = new AbortController().signal;

/**
 * The wait loop every recipe shares (mutex, read-write, the semaphore's leases; Curator's
 * LockInternals.internalLockLoop): create our node, look where it stands, hold, or wait for the
 * change that may let it hold and look again; a node the session lost is replaced by a new one.
 * `wait` false is tryAcquire: not holding means busy, and our node goes at once. Resolves with our
 * node (path and stat) when it holds, or undefined after a give-up (node deleted).
 * `pipelineFirstLook`: the first listing is sent right behind the create instead of after its reply.
 * ZooKeeper executes one session's requests in the order they were sent ("FIFO client order", ZooKeeper
 * Programmer's Guide, Consistency Guarantees), so that listing already holds our node when the create
 * succeeded; if the create failed or is in doubt, the listing is ignored and the loop looks as before.
 */
export async function runContenderLoop(
  run: RecipeRun,
  wait: boolean,
  deadline: number,
  signal: AbortSignal | undefined,
  look: (ours: Contender, listing?: Promise<string[]>) => Promise<Standing>,
  pipelineFirstLook = false,
): Promise<HeldNode | undefined> {
  for (;;) {
    let prefetched: Promise<string[]> | undefined;
    const contender = await createContender(
      run,
      deadline,
      pipelineFirstLook
        ? () => {
            prefetched = sharedGetChildren(run.client, run.lockPath, run.operationTimeoutMs);
            // Used only if the create succeeds at once; otherwise its outcome does not matter.
            prefetched.catch(() => undefined);
          }
        : undefined,
    );
    const ours = contender.path;
    let firstListing = contender.firstSend === true ? prefetched : undefined;
    try {
      for (;;) {
        const where = await look(contender, firstListing);
        firstListing = undefined;
        if (where.kind === 'gone') break; // the session lost our node: start over with a new one
        if (where.kind === 'holds') return { path: ours, czxid: where.czxid };
        if (!wait || Date.now() >= deadline || signal?.aborted) {
          await deleteNode(run, ours);
          return undefined;
        }
        run.onQueued?.();
        const outcome =
          'watch' in where
            ? await awaitPredecessor(run, ours, where.watch, deadline, signal ?? never)
            : await untilChanged(run, where.changed, deadline, signal ?? never);
        if (outcome !== 'changed') {
          await deleteNode(run, ours);
          return undefined;
        }
        run.hooks.onRecheck?.(run.lockPath, ours);
      }
    } catch (error) {
      await deleteNode(run, ours);
      throw error;
    }
    if (!wait || Date.now() >= deadline) return undefined;
  }
}

/** The mutex recipe: the contender loop with the mutex's look. */
export function runLockRecipe(
  run: RecipeRun,
  wait: boolean,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<HeldNode | undefined> {
  // The first look is pipelined behind the create: one round trip for an uncontended acquire where the
  // recipe as written (and the bare loop) waits for the create's reply before listing.
  return runContenderLoop(run, wait, deadline, signal, (ours, listing) => position(run, ours, listing), true);
}
