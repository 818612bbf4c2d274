import { randomBytes } from 'node:crypto';
import {
  leaseValidUntil,
  ServerQueue,
  type AcquireRequest,
  type AttemptResult,
  type Capabilities,
  type Grant,
} from '@deadbolt/core/adapter';
import { grantChannelPrefix } from '../../listen-session.js';
import { randomToken } from '../../token.js';
import { baseCapabilities, type ModeContext, type PostgresLockMode } from '../mode.js';
import { LeaseKinds, LeaseTerms, type LeaseRows } from './drivers.js';
import { electionSql, LeaseElection } from './election.js';
import { kindsSql } from './kinds-sql.js';
import { LeaseOperations } from './operations.js';
import { grantOf, LeaseQueueServer } from './queue.js';
import { leaseSql } from './sql.js';
import { leaseValidateParams, leaseValidateSql } from './validate-sql.js';

export const leaseCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  lease: 'ttl',
  // A FIFO queue on the server, the lock granted in place to its head (sql.ts, queue.ts).
  fair: true,
  // Elections on the lease row, the fence as term, the leader's id beside it (election.ts).
  election: true,
  // Holder rows with server-clock expiry and the same FIFO queue and in-place grants (kinds-sql.ts).
  readWrite: true,
  semaphore: true,
  // The row's expires_at is ttl + lockDelayMs (grant, extension, renewal); a release deletes it or hands it on.
  lockDelay: true,
  // inspect, forceRelease and list read and delete those rows; the election's leader has a term (operations.ts).
  operations: true,
});

/**
 * 'postgres:lease': a row per held lock with a server-clock expiry, and a FIFO queue of waiters on
 * the server (sql.ts): release, expiry and a waiter giving up grant the lock in place to the first
 * live waiter and NOTIFY that waiter's client on its own channel, so a contended hand-off is one
 * statement and one message, with no herd of waiters racing for the row. tryAcquire never barges past
 * a queued waiter. The waiting side (heartbeats, re-checks, grant messages) is the kit's ServerQueue
 * over this mode's queue calls (queue.ts).
 */
export class LeaseMode implements PostgresLockMode, LeaseRows {
  /** Read, write and permit holds (drivers.ts). */
  readonly kinds: LeaseKinds;
  /** Elections on the lease rows (election.ts, drivers.ts). */
  readonly election: LeaseTerms;
  private readonly sql: ReturnType<typeof leaseSql>;
  private readonly kindsSql: ReturnType<typeof kindsSql>;
  private readonly queue: ServerQueue<Grant>;
  /** The acquire, leave and heartbeat calls of the server's queue (queue.ts). */
  private readonly calls: LeaseQueueServer;
  private readonly validateSql: string;
  /** This client's grant channel: one per backend, never per key. */
  private readonly channel = `${grantChannelPrefix}${randomBytes(12).toString('hex')}`;
  /** The operator API on the same rows (operations.ts). */
  readonly operations: LeaseOperations;

  constructor(private readonly context: ModeContext) {
    const { options, statements } = context;
    this.sql = leaseSql(options.table, options.schema);
    this.kindsSql = kindsSql(options.table, options.schema);
    this.validateSql = leaseValidateSql(options.table, options.schema);
    statements.requireSchema(this.sql.schema, this.sql.probe);
    statements.requireSchema(this.kindsSql.schema, this.kindsSql.probe);
    this.operations = new LeaseOperations(statements, options.table, options.schema);
    const elections = new LeaseElection({
      sql: electionSql(options.table, options.schema),
      query: async <R extends Record<string, unknown>>(action: string, key: string, text: string, params: readonly unknown[]) =>
        (await statements.query(action, key, text, params)).rows as R[],
      waitForChange: (key, maxWaitMs, signal) => this.waitForChange(key, maxWaitMs, signal),
    });
    this.calls = new LeaseQueueServer(context, { lock: this.sql, kinds: this.kindsSql }, this.channel, (grants, ttlMs) =>
      this.renewMany(grants, ttlMs),
    );
    this.queue = new ServerQueue(this.calls);
    this.kinds = new LeaseKinds(this);
    this.election = new LeaseTerms(this, elections, this.operations);
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const token = randomToken();
    const row = await this.calls.call(request, token, false);
    if (row.held) return { acquired: true, grant: grantOf(request, token, Number(row.fence), leaseValidUntil(row.sentAt, request.ttlMs)) };
    return row.remaining_ms === null ? { acquired: false } : { acquired: false, retryAfterMs: Math.max(0, row.remaining_ms) };
  }

  /** Takes a free lock, or queues on the server and waits for the grant; undefined at the deadline or on abort. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.queue.acquire(request, deadline, signal);
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const sentAt = Date.now();
    const result = await this.context.statements.query('renew', grant.key, this.sql.renew, [
      grant.key,
      grant.token,
      rowExpiryMs(grant, ttlMs),
    ]);
    const renewed = result.rowCount === 1;
    if (renewed) this.queue.extended(grant, sentAt, ttlMs);
    return renewed;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    if (grants.length === 0) return [];
    const sentAt = Date.now();
    const result = await this.context.statements.query<{ key: string; owner: string }>(
      'renew',
      grants.length === 1 ? grants[0]!.key : undefined,
      this.sql.renewMany,
      [grants.map((g) => g.key), grants.map((g) => g.token), grants.map((g, index) => rowExpiryMs(g, ttlMs[index]!))],
    );
    const renewed = new Set(result.rows.map((row) => `${row.owner}\u0000${row.key}`));
    return grants.map((grant, index) => {
      const ok = renewed.has(`${grant.token}\u0000${grant.key}`);
      if (ok) this.queue.extended(grant, sentAt, ttlMs[index]!);
      return ok;
    });
  }

  async validate(grant: Grant): Promise<boolean> {
    return (await this.validateMany([grant]))[0] === true;
  }

  /** Every grant's row in one statement (validate-sql.ts), by the server's clock. */
  async validateMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    const key = grants.length === 1 ? grants[0]!.key : undefined;
    const result = await this.context.statements.query<{ held: boolean }>('validate', key, this.validateSql, leaseValidateParams(grants));
    return grants.map((_, index) => result.rows[index]?.held === true);
  }

  release(grant: Grant): Promise<boolean> {
    return this.releaseRow(this.sql.release, grant);
  }

  releaseKind(grant: Grant): Promise<boolean> {
    return this.releaseRow(this.kindsSql.release, grant);
  }

  /** Deletes the hold's row by its token, or hands it to the first live waiter. */
  private async releaseRow(text: string, grant: Grant): Promise<boolean> {
    this.queue.forget(grant);
    const result = await this.context.statements.query<{ live: boolean; granted_channel?: string | null; granted_payload?: string | null }>(
      'release',
      grant.key,
      text,
      [grant.key, grant.token],
    );
    const row = result.rows[0];
    // The lock went to a waiter: if it waits in this process, it need not wait for the NOTIFY.
    if (typeof row?.granted_channel === 'string' && typeof row.granted_payload === 'string') {
      this.context.listener.deliverLocally(row.granted_channel, row.granted_payload);
    }
    return row?.live === true;
  }

  /** Release notifications for election followers (lock waiters get their grant by message instead). */
  waitForChange(key: string, maxWaitMs: number, signal: AbortSignal): Promise<void> {
    return this.context.listener.wait(key, maxWaitMs, signal, async () => {
      const result = await this.context.statements.query<{ free: boolean }>('wait', key, this.sql.isFree, [key]);
      return result.rows[0]?.free === true;
    });
  }

  /** Waiters still queued leave (core is aborting their acquires anyway); the pool and listener are the backend's. */
  close(): Promise<void> {
    return this.queue.close();
  }

  /** Test support (a killed process): no tick, no re-check, no leave; the queue rows stay until their deadlines. */
  crash(): void {
    this.queue.crash();
  }
}

/**
 * Lock-delay: the row's expires_at (server clock) is the lease plus the delay, while the holder's
 * validity stays its ttl (leaseValidUntil, core's lease). A holder that stops renewing leaves the row live
 * for the delay after its lease; a release deletes it or hands it to the next waiter at once.
 */
function rowExpiryMs(grant: Grant, ttlMs: number): number {
  return ttlMs + (grant.lockDelayMs ?? 0);
}
