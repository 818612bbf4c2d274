import {
  BackendUnavailableError,
  DeadboltError,
  endpointOf,
  guardCall,
  inspectSafely,
  type AcquireRequest,
  type BackendInspection,
  type AttemptResult,
  type CampaignRequest,
  type Capabilities,
  type ElectionBackend,
  type OperationsBackend,
  type Grant,
  type TermGrant,
} from '@deadbolt/core/adapter';
import type { Etcd3 } from 'etcd3';
import { callOptions, createEtcdClient } from './client.js';
import { HeldKeys } from './held-keys.js';
import { contenderKey, contendersPrefix } from './keys.js';
import { planFor, waitFirstInQueue, type ContenderPlan, type TurnContext } from './kinds.js';
import { checkMultiSize, createAll } from './multi-recipe.js';
import { contenderAlive, contendersAlive, createContender, deleteContender, firstContender, type Contention } from './mutex-recipe.js';
import type { ResolvedEtcdOptions } from './options.js';
import { EtcdOperations } from './operations.js';
import { PendingDeletes } from './pending-deletes.js';
import { checkCandidate, refusedConfiguration } from './refused.js';
import { runOnceOn } from './run-once.js';
import { EtcdSession, type SessionLease } from './session.js';

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

/** An etcd grant: `token` is our contender key, `fence` its create_revision. */
export interface EtcdGrant extends TermGrant {
  readonly leaseId: string;
  /** Our key's create_revision, as etcd gives it (a decimal string). */
  readonly revision: string;
}

export class EtcdBackend implements ElectionBackend, OperationsBackend {
  readonly name = 'etcd';
  readonly endpoint: string;
  readonly capabilities = etcdCapabilities;
  /** No prefix by default: Deadbolt's lock on K and `etcdctl lock K` are the same lock. */
  readonly defaultPrefix = '';
  /** Queueing is the same txn as a plain attempt. */
  readonly acquireQueuesAtOnce = true;
  readonly boundsCalls = true;
  // Private: its options carry the credentials.
  private readonly client: Etcd3;
  private readonly session: EtcdSession;
  private readonly held = new HeldKeys();
  /** Every live grant by lease id, with its onLost: a lost lease loses them all. */
  private readonly riding = new Map<string, Map<EtcdGrant, AcquireRequest['onLost']>>();
  private readonly closing = new AbortController();
  private readonly pendingDeletes = new PendingDeletes(500);
  private readonly operationsRecipe: EtcdOperations;

  constructor(readonly options: ResolvedEtcdOptions) {
    this.endpoint = endpointOf(options.hosts);
    this.client = createEtcdClient(options);
    this.session = new EtcdSession(this.client, options);
    this.operationsRecipe = new EtcdOperations(this.client, options.namespace, () => callOptions(this.options));
    // Run-once claims ride leases of their own, not the session's (run-once.ts).
    Object.assign(this, runOnceOn(this.client, options, this.bounded.bind(this)));
    this.session.onLost((lease, cause) => {
      const grants = this.riding.get(lease.id);
      this.riding.delete(lease.id);
      for (const [grant, onLost] of grants ?? []) onLost(grant, cause);
    });
  }

  get callTimeoutMs(): number {
    return this.options.callTimeoutMs;
  }

  /** One txn; never queues: a contender that is not first deletes its key again (Go's TryLock). */
  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.guard('acquire', request.key, async () => {
      const grant = await this.contend(request, Buffer.alloc(0), false, Date.now(), this.closing.signal);
      return grant === undefined ? { acquired: false } : { acquired: true, grant };
    });
  }

  /** Native waiting: our key queues us by revision; we watch only the key just below ours. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.guard('acquire', request.key, () => this.contend(request, Buffer.alloc(0), true, deadline, signal));
  }

  /** Go's Election.Campaign: the same queue, with the participant id as the value; term = create_revision. */
  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    checkCandidate(request.candidate, request.key);
    return this.guard('elect', request.key, () => this.contend(request, Buffer.from(request.candidate, 'utf8'), true, deadline, signal));
  }

  /** Go's Election.Leader: the value of the first-created key under the election's prefix. */
  leader(key: string): Promise<string | undefined> {
    return this.bounded('leader', key, async () => {
      const value = await firstContender(this.client, contendersPrefix(this.options.namespace, key), callOptions(this.options));
      return value?.toString('utf8');
    });
  }

  /** Go's Election.Leader with its term (the leader key's create_revision), for election.observe(). */
  leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    return this.bounded('leader', key, () => this.operationsRecipe.leaderInfo(key));
  }

  /** The operator API (operations.ts): every hold of the key, from one range of its prefix. */
  inspect(key: string): Promise<BackendInspection> {
    return this.bounded('inspect', key, () => this.operationsRecipe.inspect(key));
  }

  /** Deletes every contender key of `key` in one txn, leaving a marker naming `by` for each. */
  forceRelease(key: string, by: string): Promise<boolean> {
    return this.bounded('forceRelease', key, () => this.operationsRecipe.forceRelease(key, by));
  }

  /** After a refused renewal: the forceRelease marker of this very key (name and create_revision), if any. */
  forcedBy(grant: Grant): Promise<string | undefined> {
    const ours = grant as EtcdGrant;
    return this.bounded('renew', grant.key, () => this.operationsRecipe.forcedBy(ours.token, ours.revision));
  }

  /** The lock names under `prefix`; a failed read ends the listing with a typed error. */
  async *listKeys(prefix: string): AsyncIterable<string> {
    const keys = this.operationsRecipe.listKeys(prefix)[Symbol.asyncIterator]();
    for (;;) {
      const next = await this.bounded('list', prefix, () => keys.next());
      if (next.done === true) return;
      yield next.value;
    }
  }

  /** The lease is the session's: a renewal checks that the lease lives and our key is still there. */
  renew(grant: Grant): Promise<boolean> {
    const ours = grant as EtcdGrant;
    return this.bounded('renew', grant.key, async () => {
      const lease = await this.session.lease();
      if (lease.id !== ours.leaseId) return false;
      return contenderAlive(this.client, ours.token, ours.revision, ours.leaseId, callOptions(this.options));
    });
  }

  /** Auto-renewal's batch: every grant's key read, 128 to a txn; a grant on an older lease is gone. */
  renewMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    const ours = grants as readonly EtcdGrant[];
    return this.bounded('renew', grants[0]?.key ?? '', async () => {
      const lease = await this.session.lease();
      const alive = await contendersAlive(
        this.client,
        ours.map((grant) => ({ key: grant.token, revision: grant.revision, leaseId: grant.leaseId })),
        callOptions(this.options),
      );
      return alive.map((held, index) => held && ours[index]!.leaseId === lease.id);
    });
  }

  /**
   * etcd's `IsOwner`: one read of our contender key. The grant holds while that key exists with the
   * create_revision we were granted (the fence) and our lease attached: a key whose lease expired is
   * gone, and a key re-created by anyone since has a newer create_revision.
   */
  validate(grant: Grant): Promise<boolean> {
    const ours = grant as EtcdGrant;
    return this.bounded('validate', grant.key, () =>
      contenderAlive(this.client, ours.token, ours.revision, ours.leaseId, callOptions(this.options)),
    );
  }

  /** Deletes our key only if it is still the one we created (txn on its create_revision). */
  release(grant: Grant): Promise<boolean> {
    const ours = grant as EtcdGrant;
    this.riding.get(ours.leaseId)?.delete(ours);
    return this.bounded('release', grant.key, async () => {
      const remove = () => deleteContender(this.client, ours.token, ours.revision, callOptions(this.options));
      try {
        const deleted = await remove();
        this.held.free(ours.token);
        return deleted;
      } catch (error) {
        // The key may still be there: its slot stays taken until a background delete lands, or the
        // next hold of ours would adopt the key, and with it this hold's fence.
        this.deleteLater(ours.token, remove);
        throw error;
      }
    });
  }

  /** Revokes the lease (every key we hold goes at once) and closes the channels. */
  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort(new BackendUnavailableError('close', { backend: this.name }));
    this.pendingDeletes.close();
    try {
      await this.session.close();
    } finally {
      this.client.close();
    }
  }

  /** The recipe run: our key on the session's lease, then either first, a wait, or (try) a retreat. */
  private async contend(
    request: AcquireRequest,
    value: Buffer,
    wait: boolean,
    deadline: number,
    signal: AbortSignal,
  ): Promise<EtcdGrant | undefined> {
    const plan: ContenderPlan = planFor(request, this.options.namespace, value, this.name);
    const lease = await this.session.lease(Date.now() + this.options.callTimeoutMs);
    const key = this.held.take((slot) => contenderKey(plan.keyPrefix, lease.id, slot));
    let keep = false;
    let created: string | undefined;
    try {
      let contention: Contention;
      if (plan.create === undefined) {
        contention = await createContender(this.client, plan.keyPrefix, key, plan.value, lease.id, callOptions(this.options));
      } else {
        const revision = await plan.create(this.client, key, lease.id, callOptions(this.options));
        if (revision === undefined) return undefined;
        contention = { myRevision: revision, ownerRevision: revision, headerRevision: revision, ownerValue: undefined };
      }
      created = contention.myRevision;
      let waited = false;
      const context = this.turnContext(wait, deadline, signal, () => {
        waited = true;
        if (wait) request.onContended?.();
      });
      let first = await plan.turn(contention, context);
      // Go checks that our key survived the wait: a lease that expired meanwhile took it.
      if (first && waited) first = await contenderAlive(this.client, key, contention.myRevision, lease.id, callOptions(this.options));
      if (!first) return undefined;
      keep = true;
      return this.grantOn(lease, request, key, contention.myRevision);
    } finally {
      if (!keep) await this.retreat(key, created);
    }
  }

  /**
   * acquireAll: our key in every lock's queue in one txn (one create_revision for all: the same
   * relative order in every queue, so no deadlock), then a wait queue by queue (multi-recipe.ts).
   */
  async acquireMany(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<readonly Grant[] | undefined> {
    const label =
      requests.length <= 3 ? requests.map((request) => request.key).join(', ') : `${requests[0]?.key}, ... (${requests.length} keys)`;
    // Before any I/O: a set etcd would refuse whole is refused here, never split.
    checkMultiSize(requests.length, { key: label, backend: this.name });
    return this.guard('acquire', label, async () => {
      const lease = await this.session.lease(Date.now() + this.options.callTimeoutMs);
      const prefixes = requests.map((request) => contendersPrefix(this.options.namespace, request.key));
      const keys = prefixes.map((prefix) => this.held.take((slot) => contenderKey(prefix, lease.id, slot)));
      let keep = false;
      let created: string | undefined;
      try {
        created = await createAll(this.client, keys, lease.id, callOptions(this.options));
        const revision = created;
        let waited = false;
        const context = this.turnContext(true, deadline, signal, () => {
          if (!waited) requests[0]?.onContended?.();
          waited = true;
        });
        for (const prefix of prefixes) if (!(await waitFirstInQueue(prefix, revision, context))) return undefined;
        if (waited) {
          const alive = await Promise.all(
            keys.map((key) => contenderAlive(this.client, key, revision, lease.id, callOptions(this.options))),
          );
          if (!alive.every(Boolean)) return undefined;
        }
        keep = true;
        return requests.map((request, index) => this.grantOn(lease, request, keys[index]!, revision));
      } finally {
        if (!keep) await Promise.all(keys.map((key) => this.retreat(key, created)));
      }
    });
  }

  private turnContext(wait: boolean, deadline: number, signal: AbortSignal, onBlocked: () => void): TurnContext {
    return {
      client: this.client,
      wait,
      deadline,
      signal: AbortSignal.any([signal, this.closing.signal]),
      callTimeoutMs: this.options.callTimeoutMs,
      onBlocked,
    };
  }

  /**
   * Takes our key back after a failed try, a deadline or an abort, then frees its local slot. When
   * the delete fails too, it is retried in the background (pending-deletes.ts) and the slot stays
   * taken until then, so no new hold of ours reuses the name meanwhile.
   */
  private async retreat(key: string, revision: string | undefined): Promise<void> {
    // Outcome of the create unknown: delete whatever our lease may have put under that name (the
    // name holds our lease id, so it can be no one else's).
    const remove =
      revision === undefined
        ? () => this.client.kv.deleteRange({ key: Buffer.from(key, 'utf8') }, callOptions(this.options))
        : () => deleteContender(this.client, key, revision, callOptions(this.options));
    try {
      await remove();
      this.held.free(key);
    } catch {
      this.deleteLater(key, remove);
    }
  }

  /** Retries a delete that failed in the background; the key's local slot is freed once it lands. */
  private deleteLater(key: string, remove: () => Promise<unknown>): void {
    if (this.closing.signal.aborted) return;
    this.pendingDeletes.add(key, async () => {
      await remove();
      this.held.free(key);
    });
  }

  private grantOn(lease: SessionLease, request: AcquireRequest, key: string, revision: string): EtcdGrant {
    const grant = { key: request.key, owner: request.owner, token: key, fence: Number(revision), leaseId: lease.id, revision } as EtcdGrant;
    // Read live by core: the lease's validity moves with every answered keep-alive.
    Object.defineProperty(grant, 'validUntil', { get: () => lease.validUntil, enumerable: true });
    let grants = this.riding.get(lease.id);
    if (grants === undefined) {
      grants = new Map();
      this.riding.set(lease.id, grants);
    }
    grants.set(grant, request.onLost);
    return grant;
  }

  /** A single bounded call: the kit's guard with our deadline and typed errors. */
  private bounded<T>(action: string, key: string, body: () => Promise<T>): Promise<T> {
    const refused = (error: unknown): never => {
      throw refusedConfiguration(error, key, this.endpoint) ?? error;
    };
    return guardCall(() => body().catch(refused), {
      action,
      key,
      backend: this.name,
      endpoint: this.endpoint,
      timeoutMs: this.options.callTimeoutMs * 2 + 500,
      signal: this.closing.signal,
    });
  }

  /** Every failure surfaces as a DeadboltError naming the key and the backend. */
  private guard<T>(action: string, key: string, body: () => Promise<T>): Promise<T> {
    return body().catch((error: unknown) => {
      if (error instanceof DeadboltError) throw error;
      throw (
        refusedConfiguration(error, key, this.endpoint) ?? new BackendUnavailableError(action, { key, backend: this.name, cause: error })
      );
    });
  }
}

// The client holds the hosts and any credentials: print the name only.
inspectSafely(EtcdBackend, (backend) => ({ name: backend.name }));
