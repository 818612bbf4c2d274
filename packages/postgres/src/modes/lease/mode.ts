import { randomBytes } from 'node:crypto';
import { InvalidArgumentError, type AcquireRequest, type AttemptResult, type Capabilities, type Grant } from '@deadbolt/core/adapter';
import { LeaseKinds, LeaseTerms, type LeaseRows } from './drivers.js';
import { electionSql, LeaseElection } from './election.js';
import { kindsSql } from './kinds-sql.js';
import { LeaseOperations } from './operations.js';
import { grantChannelPrefix } from '../../listen-session.js';
import { leaseSql } from './sql.js';
import { randomToken } from '../../token.js';
import { leaseValidateParams, leaseValidateSql } from './validate-sql.js';
import { grantOf, LeaseQueue, validFrom, type AttemptRow } from './queue.js';
import { baseCapabilities, type ModeContext, type PostgresLockMode } from '../mode.js';

export const leaseCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  lease: 'ttl',
  // A FIFO queue on the server, the lock granted in place to its head (sql.ts, lease-queue.ts).
  fair: true,
  // Elections on the lease row, the fence as term, the leader's id beside it (election.ts).
  election: true,
  // Holder rows with server-clock expiry and the same FIFO queue and in-place grants (kinds-sql.ts).
  readWrite: true,
  semaphore: true,
  // The row's expires_at is ttl + lockDelayMs (grant, extension, renewal); a release deletes it or hands it on.
  lockDelay: true,
  // inspect, forceRelease and list read and delete those rows; the election's leader has a term (lease-operations.ts).
  operations: true,
});

/**
 * A read, write or permit hold: its rows live in the kinds tables (core treats the field as opaque).
 * Until core routes every hold to its issuer, the mode tells the kinds' grants by this mark.
 */
interface KindGrant extends Grant {
  readonly kinded?: true;
}

const isKindGrant = (grant: Grant): boolean => (grant as KindGrant).kinded === true;

/**
 * 'postgres:lease': a row per held lock with a server-clock expiry, and a FIFO queue of waiters on
 * the server (sql.ts): release, expiry and a waiter giving up grant the lock in place to the first
 * live waiter and NOTIFY that waiter's client on its own channel, so a contended hand-off is one
 * statement and one message, with no herd of waiters racing for the row (issue 18). tryAcquire never
 * barges past a queued waiter. The waiting side (heartbeats, re-checks, grant messages) is LeaseQueue.
 */
export class LeaseMode implements PostgresLockMode, LeaseRows {
  /** Core skips its plain first attempt: acquire() takes a free lock in the same single call. */
  readonly acquireQueuesAtOnce = true;
  /** Read, write and permit holds (drivers.ts). */
  readonly kinds: LeaseKinds;
  /** Elections on the lease rows (election.ts, drivers.ts). */
  readonly election: LeaseTerms;
  private readonly sql: ReturnType<typeof leaseSql>;
  private readonly kindsSql: ReturnType<typeof kindsSql>;
  private readonly queue: LeaseQueue;
  private readonly validateSql: string;
  /** This client's grant channel: one per backend, never per key. */
  private readonly channel = `${grantChannelPrefix}${randomBytes(12).toString('hex')}`;
  /** The operator API on the same rows (lease-operations.ts). */
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
    this.queue = new LeaseQueue({
      waiterLeaseMs: options.waiterLeaseMs,
      channel: this.channel,
      listener: context.listener,
      attempt: (request, token, join) => this.attempt(request, token, join),
      leave: (request, token) => this.leave(request, token),
      heartbeat: async (tokens, keys) =>
        (
          await statements.query<{ token: string; queued: boolean; remaining_ms: number | null }>(
            'wait',
            tokens.length === 1 ? keys[0] : undefined,
            this.sql.heartbeat,
            [tokens, keys, options.waiterLeaseMs],
          )
        ).rows,
      extend: (grants, ttlMs) => this.renewMany(grants, ttlMs),
      extendOne: (grant, ttlMs) => this.renew(grant, ttlMs),
    });
    this.kinds = new LeaseKinds(this);
    this.election = new LeaseTerms(this, elections, this.operations);
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const token = randomToken();
    const row = await this.attempt(request, token, false);
    if (row.held) return { acquired: true, grant: grantOf(request, token, Number(row.fence), validFrom(row.sentAt, request.ttlMs)) };
    return row.remaining_ms === null ? { acquired: false } : { acquired: false, retryAfterMs: Math.max(0, row.remaining_ms) };
  }

  /** Takes a free lock, or queues on the server and waits for the grant; undefined at the deadline or on abort. */
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    return this.queue.acquire(request, deadline, signal);
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    if (isKindGrant(grant)) return (await this.renewMany([grant], [ttlMs]))[0] === true;
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
    return isKindGrant(grant) ? this.releaseKind(grant) : this.releaseRow(this.sql.release, grant);
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

  /** One call of the acquire function. A call given up on (a frozen server answers late) is undone by a leave. */
  private async attempt(request: AcquireRequest, token: string, join: boolean): Promise<AttemptRow> {
    const { waiterLeaseMs } = this.context.options;
    const kind = request.kind;
    const [text, params] =
      kind === undefined
        ? [this.sql.acquire, [request.key, token, request.ttlMs + (request.lockDelayMs ?? 0), join, this.channel, waiterLeaseMs]]
        : [
            this.kindsSql.acquire,
            [
              request.key,
              token,
              kind.type,
              kind.type === 'permit' ? kind.permits : 0,
              kind.type === 'read' ? (kind.downgradeOf?.token ?? null) : null,
              request.ttlMs,
              join,
              this.channel,
              waiterLeaseMs,
            ],
          ];
    let sentAt = Date.now();
    const result = await this.context.statements.run(
      'acquire',
      request.key,
      (client) => {
        sentAt = Date.now();
        return this.context.statements.send<AttemptRow>(client, text, params);
      },
      // Given up on: leave, which removes a queue entry and passes on a grant this attempt got, so
      // no lease or entry is left for its whole lifetime (issue 14). By its random token: always safe.
      () => this.leave(request, token),
      request.ttlMs,
    );
    const row = result.rows[0] ?? { held: false, fence: null, remaining_ms: null, sentAt };
    row.sentAt = sentAt;
    if (kind?.type === 'permit' && row.recorded_permits !== null && row.recorded_permits !== undefined) {
      throw new InvalidArgumentError(
        'permits',
        `the semaphore is in use with ${row.recorded_permits} permits, not ${kind.permits}; every client of one key must pass the same permits`,
        { key: request.key, backend: this.context.name },
      );
    }
    return row;
  }

  private async leave(request: AcquireRequest, token: string): Promise<void> {
    const text = request.kind === undefined ? this.sql.leave : this.kindsSql.leave;
    await this.context.statements.query('acquire', request.key, text, [request.key, token]);
  }
}

/**
 * Lock-delay: the row's expires_at (server clock) is the lease plus the delay, while the holder's
 * validity stays its ttl (validFrom, core's lease). A holder that stops renewing leaves the row live
 * for the delay after its lease; a release deletes it or hands it to the next waiter at once.
 */
function rowExpiryMs(grant: Grant, ttlMs: number): number {
  return ttlMs + (grant.lockDelayMs ?? 0);
}
