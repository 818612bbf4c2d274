import {
  BackendUnavailableError,
  type BackendInspection,
  type OperationsBackend,
  DeadboltError,
  inspectSafely,
  type AcquireRequest,
  type AttemptResult,
  type CampaignRequest,
  type Capabilities,
  type ElectionBackend,
  type Grant,
  type LockBackend,
  type MultiLockBackend,
  type TermGrant,
} from '@deadbolt/core/adapter';
import { checkAll } from './check-all.js';
import { nodeNameOf, readLeader, runElectionRecipe } from './election.js';
import { runMultiLockRecipe } from './multi-recipe.js';
import { checkMultiFits } from './multi-size.js';
import { GuaranteedDeletes } from './guaranteed-deletes.js';
import { lockPath } from './naming.js';
import { isNoNode, remove, stat, zxid } from './operations.js';
import { ParentSweeper } from './parent-sweeper.js';
import { checkPermits } from './permits-node.js';
import type { ResolvedZooKeeperOptions } from './options.js';
import { runLockRecipe, type RecipeHooks, type RecipeRun } from './recipe.js';
import { runOnceOn } from './run-once.js';
import { runReadWriteRecipe } from './rw-recipe.js';
import { leasesChild, locksChild, runSemaphoreRecipe } from './semaphore-recipe.js';
import { ZooKeeperSession } from './session.js';
import { nodeIsGrant } from './validate.js';
import { forceReleaseOn, forcedByOn, inspectOn, leaderInfoOn, listKeysOn, type OperatorSite } from './operator-api.js';

/**
 * CP (a quorum orders every create), fenced by the node's czxid (the ensemble-wide transaction id
 * of its creation, so it grows across holders and across leader changes), leased by the session.
 */
export const zooKeeperCapabilities: Capabilities = Object.freeze({
  consistency: 'CP',
  fencing: true,
  reentrant: 'client',
  notifications: true,
  lease: 'session',
  clock: 'server',
  minTtlMs: 1,
  // A znode path has no hard limit below jute.maxbuffer; this keeps paths readable and requests small.
  maxKeyBytes: 1024,
  // One multi enqueues a multi-lock under every path (then it waits path by path).
  multi: 'atomic',
  // Curator LeaderLatch / LeaderSelector layouts; the term is our node's czxid.
  election: true,
  // Curator's InterProcessReadWriteLock and InterProcessSemaphoreV2 layouts (rw-recipe.ts, semaphore-recipe.ts).
  readWrite: true,
  semaphore: true,
  // inspect, forceRelease, list and observe (operator-api.ts); a hold reports no ttlLeftMs: its lease
  // is the holder's session, which only the server times.
  operations: true,
});

/** A ZooKeeper grant: `token` is our node's full path. */
export interface ZooKeeperGrant extends Grant {
  readonly lockPath: string;
  /** A semaphore's path (its `locks` and `leases` children and itself are swept when emptied). */
  readonly semaphorePath?: string;
}

/**
 * A grant whose `validUntil` is its session's (ZooKeeperSession.validUntil), read live by core: the
 * lock is bounded by the last server contact + the session timeout, and no timer or per-lock write
 * is needed to move it forward.
 */
class SessionGrant implements ZooKeeperGrant {
  readonly #session: ZooKeeperSession;
  readonly semaphorePath?: string;

  constructor(
    session: ZooKeeperSession,
    readonly key: string,
    readonly owner: string,
    readonly token: string,
    readonly fence: number,
    readonly lockPath: string,
    semaphorePath?: string,
  ) {
    this.#session = session;
    if (semaphorePath !== undefined) this.semaphorePath = semaphorePath;
  }

  get validUntil(): number {
    return this.#session.validUntil;
  }
}

export class ZooKeeperBackend implements LockBackend, MultiLockBackend, ElectionBackend, OperationsBackend {
  readonly name = 'zookeeper';
  /** The ensemble, for error messages. */
  readonly endpoint: string;
  readonly capabilities = zooKeeperCapabilities;
  /** No prefix by default: key K is the lock `<basePath>/K`, the path a Curator InterProcessMutex uses. */
  readonly defaultPrefix = '';
  /** Queueing is the same create as a plain attempt: core need not try once before it queues. */
  readonly acquireQueuesAtOnce = true;
  private readonly session: ZooKeeperSession;
  /** Nodes whose delete failed or is in doubt: deleted again in the background until gone. */
  private readonly abandoned: GuaranteedDeletes;
  private readonly parents: ParentSweeper;
  /** Semaphore paths: `leases`, `locks`, then the path itself (Curator never reaps them: CURATOR-173). */
  private readonly semaphores: ParentSweeper;

  constructor(
    readonly options: ResolvedZooKeeperOptions,
    private readonly hooks: RecipeHooks = {},
  ) {
    this.endpoint = options.connectString;
    this.session = new ZooKeeperSession(options, this.name);
    Object.assign(this, runOnceOn(options, this.session, this.guard.bind(this)));
    this.abandoned = new GuaranteedDeletes(() => this.session.ready(Date.now() + options.operationTimeoutMs), options.operationTimeoutMs);
    this.parents = new ParentSweeper(options.parentCleanupDelayMs, (path) => this.removeIfEmpty(path));
    this.semaphores = new ParentSweeper(options.parentCleanupDelayMs, async (path) => {
      await Promise.all([this.removeIfEmpty(`${path}/${leasesChild}`), this.removeIfEmpty(`${path}/${locksChild}`)]);
      await this.removeIfEmpty(path);
    });
  }

  /** One operation's deadline; core bounds a wait by waitMs + this. */
  get callTimeoutMs(): number {
    return this.options.operationTimeoutMs;
  }

  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.attempt(request, false, Date.now() + this.options.operationTimeoutMs, undefined).then((grant) =>
      grant ? { acquired: true, grant } : { acquired: false },
    );
  }

  /** Native waiting: the wait is the recipe's predecessor watch. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.attempt(request, true, deadline, signal);
  }

  /** Multi-lock: our node under every path in one multi, then a wait path by path (multi-recipe.ts). */
  acquireMany(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<readonly Grant[] | undefined> {
    const key = requests.length <= 3 ? requests.map((each) => each.key).join(', ') : `${requests[0]?.key}, ... (${requests.length} keys)`;
    return this.guard('acquire', key, async () => {
      checkMultiFits(
        requests.map((each) => ({ lockPath: lockPath(this.options.basePath, each.key), data: Buffer.from(each.owner, 'utf8') })),
        this.options.juteMaxBuffer,
        key,
      );
      const client = await this.session.ready(Number.POSITIVE_INFINITY, key);
      if (this.abandoned.hasPending) await this.abandoned.retry();
      const runs = requests.map((each) => this.recipeRun(client, each, Buffer.from(each.owner, 'utf8')));
      const held = await runMultiLockRecipe(runs, deadline, signal, requests[0]?.onContended);
      if (held === undefined) {
        for (const run of runs) await this.parents.schedule(run.lockPath);
        return undefined;
      }
      return held.map((node, index) => this.grantFor(requests[index]!, node.path, node.czxid, runs[index]!.lockPath));
    });
  }

  /** Election in Curator's LeaderLatch (or LeaderSelector) layout: data = the participant id, term = czxid. */
  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    return this.guard('elect', request.key, async () => {
      const client = await this.session.ready(Number.POSITIVE_INFINITY, request.key);
      if (this.abandoned.hasPending) await this.abandoned.retry();
      const run: RecipeRun = {
        ...this.recipeRun(client, request, Buffer.from(request.candidate, 'utf8')),
        nodeName: nodeNameOf(request.layout),
      };
      const ours = await runElectionRecipe(run, deadline, signal);
      if (ours === undefined) {
        await this.parents.schedule(run.lockPath);
        return undefined;
      }
      return this.grantFor(request, ours.path, ours.czxid, run.lockPath);
    });
  }

  /** The current leader's id: the data of the first node (Curator's getLeader()). */
  leader(key: string, layout?: string): Promise<string | undefined> {
    return this.guard('leader', key, async () => {
      const client = await this.session.ready(Date.now() + this.options.operationTimeoutMs, key);
      return readLeader(client, lockPath(this.options.basePath, key), layout, this.options.operationTimeoutMs);
    });
  }

  /** The lease is the session: renewing only checks that our node still exists. */
  async renew(grant: Grant): Promise<boolean> {
    return this.guard('renew', grant.key, async () => {
      const client = await this.session.ready(Date.now() + this.options.operationTimeoutMs, grant.key);
      return (await stat(client, grant.token, Date.now() + this.options.operationTimeoutMs)) !== undefined;
    });
  }

  validate(grant: Grant): Promise<boolean> {
    const deadline = Date.now() + this.options.operationTimeoutMs;
    return this.guard('validate', grant.key, async () => nodeIsGrant(await this.session.ready(deadline, grant.key), grant, deadline));
  }

  /** Core's auto-renew batch: every node checked in one multi request per 500 locks. */
  async renewMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    const key = grants[0]?.key ?? '';
    return this.guard('renew', key, async () => {
      const client = await this.session.ready(Date.now() + this.options.operationTimeoutMs, key);
      return checkAll(
        client,
        grants.map((grant) => grant.token),
        Date.now() + this.options.operationTimeoutMs,
      );
    });
  }

  /** Deletes our own node (its path holds our guid, so it can never be another owner's), then tidies the parent. */
  async release(grant: Grant): Promise<boolean> {
    this.session.untrack(grant.token);
    return this.guard('release', grant.key, async () => {
      const client =
        this.session.connectedClient ??
        (await this.session.ready(Date.now() + this.options.operationTimeoutMs, grant.key).catch((error: unknown) => {
          // Not connected: the session (and our node) may well live on; delete it once we reconnect.
          this.abandoned.add(grant.token);
          throw error;
        }));
      let deleted = true;
      try {
        await remove(client, grant.token, Date.now() + this.options.operationTimeoutMs);
      } catch (error) {
        // NO_NODE: already gone (the session ended, or an earlier release's reply was lost).
        if (isNoNode(error)) deleted = false;
        else {
          this.abandoned.add(grant.token);
          throw error;
        }
      }
      const { semaphorePath, lockPath: parent } = grant as Partial<ZooKeeperGrant>;
      const sweep =
        semaphorePath !== undefined
          ? this.semaphores.schedule(semaphorePath)
          : this.parents.schedule(parent ?? grant.token.slice(0, grant.token.lastIndexOf('/')));
      if (sweep !== undefined) await sweep;
      return deleted;
    });
  }

  /** The operator API (operator-api.ts): inspect, forceRelease, list, the forced marker and the leader's term. */
  inspect(key: string): Promise<BackendInspection> {
    return this.guard('inspect', key, () => inspectOn(this.operatorSite, key));
  }

  forceRelease(key: string, by: string): Promise<boolean> {
    return this.guard('forceRelease', key, () => forceReleaseOn(this.operatorSite, key, by));
  }

  listKeys(prefix: string): AsyncIterable<string> {
    const keys = listKeysOn(this.operatorSite, prefix);
    const guard = this.guard.bind(this);
    return {
      [Symbol.asyncIterator]: () => ({ next: () => guard('list', prefix, () => keys.next()) }),
    };
  }

  forcedBy(grant: Grant): Promise<string | undefined> {
    return this.guard('renew', grant.key, () => forcedByOn(this.operatorSite, grant));
  }

  leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    return this.guard('leader', key, () => leaderInfoOn(this.operatorSite, key));
  }

  private get operatorSite(): OperatorSite {
    return {
      basePath: this.options.basePath,
      operationTimeoutMs: this.options.operationTimeoutMs,
      client: (key) => this.session.ready(Date.now() + this.options.operationTimeoutMs, key),
    };
  }

  /** The ZooKeeper session's id and password, for operational tools (tests force an expiry with them, like Curator's KillSession). */
  sessionCredentials(): { readonly sessionId: Buffer; readonly password: Buffer } | undefined {
    return this.session.credentials();
  }

  async close(): Promise<void> {
    this.abandoned.close();
    await Promise.all([this.parents.flush(), this.semaphores.flush()]);
    await this.session.close();
  }

  private async attempt(
    request: AcquireRequest,
    wait: boolean,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<Grant | undefined> {
    return this.guard('acquire', request.key, async () => {
      // Connecting has its own deadline (connectTimeoutMs), independent of how long we may wait for the lock.
      const client = this.session.connectedClient ?? (await this.session.ready(Number.POSITIVE_INFINITY, request.key));
      const sessionEnded = this.session.endedSignal;
      if (this.abandoned.hasPending) await this.abandoned.retry();
      const run: RecipeRun = {
        client,
        lockPath: lockPath(this.options.basePath, request.key),
        data: Buffer.from(request.owner, 'utf8'),
        operationTimeoutMs: this.options.operationTimeoutMs,
        hooks: this.hooks,
        sessionEnded,
        abandon: (path) => this.abandoned.add(path),
        ...(request.onContended ? { onQueued: request.onContended } : {}),
      };
      const kind = request.kind;
      const ours =
        kind === undefined
          ? await runLockRecipe(run, wait, deadline, signal)
          : kind.type === 'permit'
            ? await runSemaphoreRecipe(run, kind.permits, wait, deadline, signal, () =>
                checkPermits(run, request.key, kind.permits, this.name),
              )
            : await runReadWriteRecipe(run, kind.type, kind.type === 'read' ? kind.downgradeOf?.token : undefined, wait, deadline, signal);
      const semaphorePath = kind?.type === 'permit' ? run.lockPath : undefined;
      if (ours === undefined) {
        if (semaphorePath !== undefined) await this.semaphores.schedule(semaphorePath);
        else if (wait) await this.parents.schedule(run.lockPath);
        return undefined;
      }
      const grant = new SessionGrant(this.session, request.key, request.owner, ours.path, zxid(ours.czxid), run.lockPath, semaphorePath);
      this.session.track(grant, request.onLost);
      return grant;
    });
  }

  private recipeRun(client: RecipeRun['client'], request: AcquireRequest, data: Buffer): RecipeRun {
    return {
      client,
      lockPath: lockPath(this.options.basePath, request.key),
      data,
      operationTimeoutMs: this.options.operationTimeoutMs,
      hooks: this.hooks,
      sessionEnded: this.session.endedSignal,
      abandon: (path) => this.abandoned.add(path),
      ...(request.onContended ? { onQueued: request.onContended } : {}),
    };
  }

  /** A held node as a grant, tracked so that the end of the session is reported as its loss. */
  private grantFor(request: AcquireRequest, path: string, czxid: Buffer, nodeLockPath: string): ZooKeeperGrant {
    const grant = new SessionGrant(this.session, request.key, request.owner, path, zxid(czxid), nodeLockPath);
    this.session.track(grant, request.onLost);
    return grant;
  }

  /** Best-effort: the lock's parent node goes when its last contender does (ZooKeeper refuses while it has children). */
  private async removeIfEmpty(path: string): Promise<void> {
    const client = await this.session.ready(Date.now() + this.options.operationTimeoutMs).catch(() => undefined);
    if (!client) return;
    await remove(client, path, Date.now() + this.options.operationTimeoutMs).catch(() => undefined);
  }

  /** Every failure surfaces as a DeadboltError naming the key and the backend (`body` is async: it never throws, it rejects). */
  private guard<T>(action: string, key: string, body: () => Promise<T>): Promise<T> {
    return body().catch((error: unknown) => {
      if (error instanceof DeadboltError) throw error;
      throw new BackendUnavailableError(action, { key, backend: this.name, cause: error });
    });
  }
}

// The session holds the connect string and any auth: print the name only.
inspectSafely(ZooKeeperBackend, (backend) => ({ name: backend.name }));
