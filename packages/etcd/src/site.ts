import {
  BackendUnavailableError,
  closedError,
  DeadboltError,
  endpointOf,
  explainConnectionError,
  guardCall,
  type AcquireRequest,
  type Grant,
  type TermGrant,
} from '@deadbolt/core/adapter';
import type { Etcd3 } from 'etcd3';
import { callOptions, createEtcdClient } from './client.js';
import { HeldKeys } from './held-keys.js';
import { LateCreates } from './late-creates.js';
import { contenderKey } from './keys.js';
import { planFor, type ContenderPlan, type TurnContext } from './kinds.js';
import { contenderAlive, createContender, deleteContender, type Contention } from './mutex-recipe.js';
import type { ResolvedEtcdOptions } from './options.js';
import { PendingDeletes } from './pending-deletes.js';
import { classifyEtcdError } from './refused.js';
import { EtcdSession, type SessionLease } from './session.js';

/** An etcd grant: `token` is our contender key, `fence` its create_revision. */
export interface EtcdGrant extends TermGrant {
  readonly leaseId: string;
  /** Our key's create_revision, as etcd gives it (a decimal string). */
  readonly revision: string;
}

/**
 * What every driver of one etcd backend shares: the client, the session's lease, the contender keys
 * in use, the deletes still pending and the guards that type every failure. Each driver issues its
 * own holds through `contend` (or, for a multi-lock, the pieces of it).
 */
export class EtcdSite {
  readonly name = 'etcd';
  readonly endpoint: string;
  // Its options carry the credentials: never printed (the backend's inspectSafely shows the name only).
  readonly client: Etcd3;
  readonly session: EtcdSession;
  readonly held = new HeldKeys();
  /** Every live grant by lease id, with its onLost: a lost lease loses them all. */
  readonly riding = new Map<string, Map<EtcdGrant, AcquireRequest['onLost']>>();
  readonly closing = new AbortController();
  private readonly pendingDeletes = new PendingDeletes(500);
  private readonly lateCreates: LateCreates;

  constructor(readonly options: ResolvedEtcdOptions) {
    this.endpoint = endpointOf(options.hosts);
    this.client = createEtcdClient(options);
    this.session = new EtcdSession(this.client, options);
    this.lateCreates = new LateCreates(
      this.client,
      options.callTimeoutMs,
      (key, revision) => this.removeNow(key, () => deleteContender(this.client, key, revision, this.callOptions()), false),
      (key) => this.held.free(key),
    );
    this.session.onLost((lease, cause) => {
      this.lateCreates.leaseEnded(lease.id);
      const grants = this.riding.get(lease.id);
      this.riding.delete(lease.id);
      for (const [grant, onLost] of grants ?? []) onLost(grant, cause);
    });
  }

  /** One call's deadline, bounded by the configured call timeout. */
  callOptions(): { deadline: number } {
    return callOptions(this.options);
  }

  /** The session's lease, waiting at most one call for it. */
  lease(): Promise<SessionLease> {
    return this.session.lease(Date.now() + this.options.callTimeoutMs);
  }

  /** The recipe run: our key on the session's lease, then either first, a wait, or (try) a retreat. */
  async contend(
    request: AcquireRequest,
    value: Buffer,
    wait: boolean,
    deadline: number,
    signal: AbortSignal,
  ): Promise<EtcdGrant | undefined> {
    const plan: ContenderPlan = planFor(request, this.options.namespace, value, this.name);
    const lease = await this.lease();
    const key = this.held.take((slot) => contenderKey(plan.keyPrefix, lease.id, slot));
    let keep = false;
    let created: string | undefined;
    // The create answered that it made nothing (a downgrade whose write was gone): nothing to take back.
    let answeredNone = false;
    try {
      let contention: Contention;
      if (plan.create === undefined) {
        contention = await createContender(this.client, plan.keyPrefix, key, plan.value, lease.id, this.callOptions());
      } else {
        const revision = await plan.create(this.client, key, lease.id, this.callOptions());
        if (revision === undefined) {
          answeredNone = true;
          return undefined;
        }
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
      if (first && waited) first = await contenderAlive(this.client, key, contention.myRevision, lease.id, this.callOptions());
      if (!first) return undefined;
      keep = true;
      return this.grantOn(lease, request, key, contention.myRevision);
    } finally {
      if (answeredNone) this.held.free(key);
      else if (!keep) await this.retreat(key, created, lease.id);
    }
  }

  turnContext(wait: boolean, deadline: number, signal: AbortSignal, onBlocked: () => void): TurnContext {
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
  async retreat(key: string, revision: string | undefined, leaseId: string): Promise<void> {
    if (revision !== undefined) {
      await this.removeNow(key, () => deleteContender(this.client, key, revision, this.callOptions()), true);
      return;
    }
    // Outcome of the create unknown: delete whatever our lease may have put under that name (the
    // name holds our lease id, so it can be no one else's), then watch the name for the create
    // landing later still (late-creates.ts); the name stays taken while its lease lives.
    await this.removeNow(
      key,
      async () => {
        const deleted = await this.client.kv.deleteRange({ key: Buffer.from(key, 'utf8') }, this.callOptions());
        this.lateCreates.watch(key, leaseId, (BigInt(deleted.header.revision) + 1n).toString());
      },
      false,
    );
  }

  /** Runs `remove` now, and in the background until it answers if it fails; `free` frees the slot after. */
  private async removeNow(key: string, remove: () => Promise<unknown>, free: boolean): Promise<void> {
    const removeAndFree = async (): Promise<void> => {
      await remove();
      if (free) this.held.free(key);
    };
    try {
      await removeAndFree();
    } catch {
      this.deleteLater(key, removeAndFree);
    }
  }

  /** Retries a delete that failed in the background, until it answers. */
  deleteLater(key: string, remove: () => Promise<unknown>): void {
    if (this.closing.signal.aborted) return;
    this.pendingDeletes.add(key, remove);
  }

  grantOn(lease: SessionLease, request: AcquireRequest, key: string, revision: string): EtcdGrant {
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

  /** Revokes the lease (every key we hold goes at once) and closes the channels. */
  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort(closedError('close', undefined, this.name));
    this.pendingDeletes.close();
    this.lateCreates.close();
    try {
      await this.session.close();
    } finally {
      this.client.close();
    }
  }

  /** A single bounded call: the kit's guard with our deadline and typed errors. */
  bounded<T>(action: string, key: string, body: () => Promise<T>): Promise<T> {
    return guardCall(body, {
      action,
      key,
      backend: this.name,
      endpoint: this.endpoint,
      timeoutMs: this.options.callTimeoutMs * 2 + 500,
      signal: this.closing.signal,
      classify: classifyEtcdError,
    });
  }

  /** Every failure surfaces as a DeadboltError naming the key and the backend. */
  guard<T>(action: string, key: string, body: () => Promise<T>): Promise<T> {
    return body().catch((error: unknown) => {
      if (error instanceof DeadboltError) throw error;
      const context = { action, key, backend: this.name, endpoint: this.endpoint };
      throw (
        explainConnectionError(error, context, classifyEtcdError) ??
        new BackendUnavailableError(action, { key, backend: this.name, cause: error })
      );
    });
  }
}

/** This backend's grants: every driver issues EtcdGrants (a contender key and its create_revision). */
export const etcdGrant = (grant: Grant): EtcdGrant => grant as EtcdGrant;
