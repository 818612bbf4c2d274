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
import { ContenderKeeper } from './contender-keeper.js';
import { EtcdElection } from './election-driver.js';
import { EtcdKinds } from './kinds-driver.js';
import { EtcdMulti } from './multi-driver.js';
import { EtcdOperations } from './operations.js';
import { EtcdOperationsDriver } from './operations-driver.js';
import type { ResolvedEtcdOptions } from './options.js';
import { runOnceOn } from './run-once.js';
import { EtcdSite } from './site.js';

/**
 * CP (raft orders every txn), fenced by the key's create_revision (the store's revision, which
 * grows across holders and leaders), leased by the client's one lease kept alive: 'session', as
 * ZooKeeper. The request's ttlMs does not set that lease (sessionTtlMs does), so any ttl is taken.
 */
export const etcdCapabilities: Capabilities = Object.freeze({
  consistency: 'CP',
  fencing: true,
  reentrant: 'client',
  notifications: true,
  lease: 'session',
  clock: 'server',
  minTtlMs: 1,
  // etcd's default request limit is 1.5 MiB; this keeps keys readable and txns small.
  maxKeyBytes: 1024,
  election: true,
  // Read-write locks (Go's contrib/recipes RWMutex layout), FIFO semaphores, and acquireAll queued
  // in one txn (kinds.ts, multi-recipe.ts): each a key per contender, ordered by create_revision.
  readWrite: true,
  semaphore: true,
  multi: 'atomic',
  // inspect, forceRelease, list and observe (operations.ts); ttlLeftMs is what is left of the session's lease.
  operations: true,
});

export type { EtcdGrant } from './site.js';

/**
 * The mutex's driver (Go's concurrency.Mutex), with the other primitives' drivers beside it, all on
 * one client and session lease (site.ts). Every hold is a contender key: the mutex keeps its own as
 * every driver does (contender-keeper.ts).
 */
export class EtcdBackend extends ContenderKeeper implements LockBackend {
  readonly name = 'etcd';
  readonly endpoint: string;
  readonly capabilities = etcdCapabilities;
  /** No prefix by default: Deadbolt's lock on K and `etcdctl lock K` are the same lock. */
  readonly defaultPrefix = '';
  readonly boundsCalls = true;
  readonly kinds: KindsDriver;
  readonly multi: MultiDriver;
  readonly election: ElectionDriver;
  readonly operations: OperationsDriver;
  /** Run-once claims ride leases of their own, not the session's (run-once.ts). */
  readonly runs: RunsDriver;

  constructor(readonly options: ResolvedEtcdOptions) {
    const site = new EtcdSite(options);
    super(site);
    this.endpoint = site.endpoint;
    const reads = new EtcdOperations(site.client, options.namespace, () => site.callOptions());
    this.kinds = new EtcdKinds(site);
    this.multi = new EtcdMulti(site);
    this.election = new EtcdElection(site, reads);
    this.operations = new EtcdOperationsDriver(site, reads);
    this.runs = runOnceOn(site.client, options, site.bounded.bind(site));
  }

  get callTimeoutMs(): number {
    return this.options.callTimeoutMs;
  }

  /** One txn; never queues: a contender that is not first deletes its key again (Go's TryLock). */
  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const site = this.site;
    return site.guard('acquire', request.key, async () => {
      const grant = await site.contend(request, Buffer.alloc(0), false, Date.now(), site.closing.signal);
      return grant === undefined ? { acquired: false } : { acquired: true, grant };
    });
  }

  /** Native waiting: our key queues us by revision; queueing is the same txn as a try, so it is the first attempt too. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.site.guard('acquire', request.key, () => this.site.contend(request, Buffer.alloc(0), true, deadline, signal));
  }

  /** Revokes the lease (every key we hold goes at once) and closes the channels. */
  close(): Promise<void> {
    return this.site.close();
  }
}

// The client holds the hosts and any credentials: print the name only.
inspectSafely(EtcdBackend, (backend) => ({ name: backend.name }));
