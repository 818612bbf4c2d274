import {
  inspectSafely,
  type AcquireRequest,
  type AttemptResult,
  type Capabilities,
  type ElectionDriver,
  type Grant,
  type KindsDriver,
  type LockBackend,
  type MultiDriver,
  type OperationsDriver,
  type RunsDriver,
} from '@deadbolt/core/adapter';
import { ZooKeeperElection } from './election-driver.js';
import { ZooKeeperKinds } from './kinds-driver.js';
import { ZooKeeperMulti } from './multi-driver.js';
import { NodeKeeper } from './node-keeper.js';
import { ZooKeeperOperations } from './operations-driver.js';
import type { ResolvedZooKeeperOptions } from './options.js';
import { runLockRecipe, type RecipeHooks } from './recipe.js';
import { runOnceOn } from './run-once.js';
import { ZooKeeperSite } from './site.js';

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

export type { ZooKeeperGrant } from './site.js';

/**
 * The mutex's driver (Curator's InterProcessMutex), with the other primitives' drivers beside it,
 * all on one session (site.ts). Every hold is an ephemeral node: the mutex keeps its own as every
 * driver does (node-keeper.ts).
 */
export class ZooKeeperBackend extends NodeKeeper implements LockBackend {
  readonly name = 'zookeeper';
  /** The ensemble, for error messages. */
  readonly endpoint: string;
  readonly capabilities = zooKeeperCapabilities;
  /** No prefix by default: key K is the lock `<basePath>/K`, the path a Curator InterProcessMutex uses. */
  readonly defaultPrefix = '';
  readonly kinds: KindsDriver;
  readonly multi: MultiDriver;
  readonly election: ElectionDriver;
  readonly operations: OperationsDriver;
  readonly runs: RunsDriver;

  constructor(
    readonly options: ResolvedZooKeeperOptions,
    hooks: RecipeHooks = {},
  ) {
    const site = new ZooKeeperSite(options, hooks);
    super(site);
    this.endpoint = options.connectString;
    this.kinds = new ZooKeeperKinds(site);
    this.multi = new ZooKeeperMulti(site);
    this.election = new ZooKeeperElection(site);
    this.operations = new ZooKeeperOperations(site);
    this.runs = runOnceOn(options, site.session, site.guard.bind(site));
  }

  /** One operation's deadline; core bounds a wait by waitMs + this. */
  get callTimeoutMs(): number {
    return this.options.operationTimeoutMs;
  }

  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.contend(request, false, this.site.opDeadline(), undefined).then((grant) =>
      grant ? { acquired: true, grant } : { acquired: false },
    );
  }

  /** Native waiting: the recipe's predecessor watch; queueing is the same create as a try, so it is the first attempt too. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.contend(request, true, deadline, signal);
  }

  /** The ZooKeeper session's id and password, for operational tools (tests force an expiry with them, like Curator's KillSession). */
  sessionCredentials(): { readonly sessionId: Buffer; readonly password: Buffer } | undefined {
    return this.site.session.credentials();
  }

  close(): Promise<void> {
    return this.site.close();
  }

  private contend(request: AcquireRequest, wait: boolean, deadline: number, signal: AbortSignal | undefined): Promise<Grant | undefined> {
    return this.site.contend({
      request,
      deadline,
      data: Buffer.from(request.owner, 'utf8'),
      recipe: (run) => runLockRecipe(run, wait, deadline, signal),
      sweeper: this.site.parents,
      sweepAfterGiveUp: wait,
    });
  }
}

// The session holds the connect string and any auth: print the name only.
inspectSafely(ZooKeeperBackend, (backend) => ({ name: backend.name }));
