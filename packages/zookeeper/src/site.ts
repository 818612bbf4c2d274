import { BackendUnavailableError, DeadboltError, type AcquireRequest, type Grant } from '@deadbolt/core/adapter';
import type { Client } from 'node-zookeeper-client';
import { GuaranteedDeletes } from './guaranteed-deletes.js';
import { lockPath } from './naming.js';
import { remove, zxid } from './operations.js';
import type { ResolvedZooKeeperOptions } from './options.js';
import { ParentSweeper } from './parent-sweeper.js';
import type { HeldNode, RecipeHooks, RecipeRun } from './recipe.js';
import { leasesChild, locksChild } from './semaphore-recipe.js';
import { ZooKeeperSession } from './session.js';

/** A ZooKeeper grant: `token` is our node's full path. */
export interface ZooKeeperGrant extends Grant {
  readonly lockPath: string;
  /** A semaphore's path (its `locks` and `leases` children and itself are swept when emptied). */
  readonly semaphorePath?: string;
}

/**
 * A grant whose `validUntil` is its session's (ZooKeeperSession.validUntil), read live by core: the
 * lock is bounded by the last server contact + the session timeout, and no timer or per-lock write
 * is needed to move it forward. It carries the sweep its release schedules (set by the driver that
 * issued it), so a release never asks which recipe made the node.
 */
class SessionGrant implements ZooKeeperGrant {
  readonly #session: ZooKeeperSession;
  readonly #sweeper: ParentSweeper;
  readonly semaphorePath?: string;

  constructor(
    session: ZooKeeperSession,
    sweeper: ParentSweeper,
    readonly key: string,
    readonly owner: string,
    readonly token: string,
    readonly fence: number,
    readonly lockPath: string,
    semaphorePath?: string,
  ) {
    this.#session = session;
    this.#sweeper = sweeper;
    if (semaphorePath !== undefined) this.semaphorePath = semaphorePath;
  }

  get validUntil(): number {
    return this.#session.validUntil;
  }

  /** The parent (or semaphore) this node lived under, swept once empty; a promise only without a sweep delay. */
  tidy(): Promise<void> | undefined {
    return this.#sweeper.schedule(this.semaphorePath ?? this.lockPath);
  }
}

/** How one contender run is made and what is tidied when it gives up. */
export interface Contention {
  readonly request: AcquireRequest;
  readonly deadline: number;
  readonly data: Buffer;
  /** The recipe: our node once it holds, or undefined after a give-up (node deleted). */
  readonly recipe: (run: RecipeRun) => Promise<HeldNode | undefined>;
  /** Where the grant's release (and a give-up) sweeps: the lock's parent, or the semaphore's nodes. */
  readonly sweeper: ParentSweeper;
  /** Sweep after a give-up: after a wait (a try leaves the parent to its holder), or always (a semaphore). */
  readonly sweepAfterGiveUp: boolean;
  /** The semaphore's path, for a permit's grant. */
  readonly semaphorePath?: string;
}

/**
 * What every driver of one ZooKeeper backend shares: the session, the deletes in doubt, the parent
 * sweepers and the guard that types every failure. Each driver issues its own holds through it.
 */
export class ZooKeeperSite {
  readonly name = 'zookeeper';
  readonly session: ZooKeeperSession;
  /** Nodes whose delete failed or is in doubt: deleted again in the background until gone. */
  readonly abandoned: GuaranteedDeletes;
  readonly parents: ParentSweeper;
  /** Semaphore paths: `leases`, `locks`, then the path itself (Curator never reaps them: CURATOR-173). */
  readonly semaphores: ParentSweeper;

  constructor(
    readonly options: ResolvedZooKeeperOptions,
    readonly hooks: RecipeHooks,
  ) {
    this.session = new ZooKeeperSession(options, this.name);
    this.abandoned = new GuaranteedDeletes(() => this.session.ready(Date.now() + options.operationTimeoutMs), options.operationTimeoutMs);
    this.parents = new ParentSweeper(options.parentCleanupDelayMs, (path) => this.removeIfEmpty(path));
    this.semaphores = new ParentSweeper(options.parentCleanupDelayMs, async (path) => {
      await Promise.all([this.removeIfEmpty(`${path}/${leasesChild}`), this.removeIfEmpty(`${path}/${locksChild}`)]);
      await this.removeIfEmpty(path);
    });
  }

  /** One operation's deadline from now. */
  opDeadline(): number {
    return Date.now() + this.options.operationTimeoutMs;
  }

  /** A connected client within one operation's deadline. */
  client(key: string): Promise<Client> {
    return this.session.ready(this.opDeadline(), key);
  }

  /** Creates our node and runs the recipe: a tracked grant when it holds, undefined after a give-up. */
  contend(contention: Contention): Promise<Grant | undefined> {
    const { request } = contention;
    return this.guard('acquire', request.key, async () => {
      // Connecting has its own deadline (connectTimeoutMs), independent of how long we may wait for the lock.
      const client = this.session.connectedClient ?? (await this.session.ready(Number.POSITIVE_INFINITY, request.key));
      const sessionEnded = this.session.endedSignal;
      if (this.abandoned.hasPending) await this.abandoned.retry();
      const run = this.recipeRun(client, request, contention.data, sessionEnded);
      const ours = await contention.recipe(run);
      if (ours === undefined) {
        if (contention.sweepAfterGiveUp) await contention.sweeper.schedule(contention.semaphorePath ?? run.lockPath);
        return undefined;
      }
      return this.grantFor(request, ours, run.lockPath, contention.sweeper, contention.semaphorePath);
    });
  }

  /** What a recipe runs with: the client, the lock's path, our node's data and the backend's hooks. */
  recipeRun(client: Client, request: AcquireRequest, data: Buffer, sessionEnded = this.session.endedSignal): RecipeRun {
    return {
      client,
      lockPath: lockPath(this.options.basePath, request.key),
      data,
      operationTimeoutMs: this.options.operationTimeoutMs,
      hooks: this.hooks,
      sessionEnded,
      abandon: (path) => this.abandoned.add(path),
      ...(request.onContended ? { onQueued: request.onContended } : {}),
    };
  }

  /** A held node as a grant, tracked so that the end of the session is reported as its loss. */
  grantFor(request: AcquireRequest, node: HeldNode, nodeLockPath: string, sweeper = this.parents, semaphorePath?: string): ZooKeeperGrant {
    const grant = new SessionGrant(
      this.session,
      sweeper,
      request.key,
      request.owner,
      node.path,
      zxid(node.czxid),
      nodeLockPath,
      semaphorePath,
    );
    this.session.track(grant, request.onLost);
    return grant;
  }

  /**
   * The sweep a released grant schedules: the one its issuing driver gave it. A grant that is not
   * ours as issued (a copy without its sweep) tidies the parent of its node.
   */
  tidyAfterRelease(grant: Grant): Promise<void> | undefined {
    if (grant instanceof SessionGrant) return grant.tidy();
    return this.parents.schedule(grant.token.slice(0, grant.token.lastIndexOf('/')));
  }

  async close(): Promise<void> {
    this.abandoned.close();
    await Promise.all([this.parents.flush(), this.semaphores.flush()]);
    await this.session.close();
  }

  /** Every failure surfaces as a DeadboltError naming the key and the backend (`body` is async: it never throws, it rejects). */
  guard<T>(action: string, key: string, body: () => Promise<T>): Promise<T> {
    return body().catch((error: unknown) => {
      if (error instanceof DeadboltError) throw error;
      throw new BackendUnavailableError(action, { key, backend: this.name, cause: error });
    });
  }

  /** Best-effort: the lock's parent node goes when its last contender does (ZooKeeper refuses while it has children). */
  private async removeIfEmpty(path: string): Promise<void> {
    const client = await this.session.ready(this.opDeadline()).catch(() => undefined);
    if (!client) return;
    await remove(client, path, this.opDeadline()).catch(() => undefined);
  }
}
