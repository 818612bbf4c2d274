import {
  BackendUnavailableError,
  DeadboltError,
  guardCall,
  inspectSafely,
  withDeadline,
  type AcquireRequest,
  type AttemptResult,
  type CampaignRequest,
  type Capabilities,
  type ElectionBackend,
  type Grant,
  type LockBackend,
  type TermGrant,
} from '@deadbolt/core/adapter';
import pg from 'pg';
import { clientConfig, Gate, isAlreadyExists } from '../connect.js';
import { electionSql, LeaseElection } from '../election.js';
import { ReleaseListener } from '../listener.js';
import type { ResolvedPostgresOptions } from '../options.js';
import { leaseSql, releaseChannel } from '../sql.js';
import { randomToken } from '../token.js';

export const leaseCapabilities: Capabilities = Object.freeze({
  consistency: 'CP',
  fencing: true,
  reentrant: 'client',
  notifications: true,
  lease: 'ttl',
  clock: 'server',
  minTtlMs: 10,
  maxKeyBytes: 1024,
  // Elections on the lease row, the fence as term, the leader's id beside it (election.ts).
  election: true,
});

/** Client-side slack over statement_timeout, which should fire first while the server runs. */
const slackMs = 500;

/**
 * 'postgres:lease': a row per held lock with a server-clock expiry, taken and handed over by one
 * conditional upsert (INSERT ... ON CONFLICT DO UPDATE ... WHERE expires_at < now()). Release deletes
 * only our row (owner = the grant's random token) and NOTIFYs waiters in the same statement.
 */
export class LeaseBackend implements LockBackend, ElectionBackend {
  readonly name = 'postgres:lease';
  /** The server, for error messages. */
  readonly endpoint: string;
  readonly capabilities = leaseCapabilities;
  readonly defaultPrefix = '';
  private readonly pool: pg.Pool;
  /** False for the application's own pool, which its owner ends, not close(). */
  private readonly ownsPool: boolean;
  private readonly sql: ReturnType<typeof leaseSql>;
  private readonly listener: ReleaseListener;
  private readonly deadlineMs: number;
  private readonly gate: Gate;
  private schema: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /** Aborted by close(): stops the kit's retried undo of an attempt given up on. */
  private readonly closed = new AbortController();
  private readonly election: LeaseElection;

  constructor(options: ResolvedPostgresOptions) {
    this.endpoint = options.endpoint;
    this.sql = leaseSql(options.table, options.schema);
    this.deadlineMs = options.connectTimeoutMs + options.statementTimeoutMs + slackMs;
    // Queue time is bounded separately from the statement deadline (see Gate).
    this.gate = new Gate(options.pool, 30_000);
    this.ownsPool = options.ownPool === undefined;
    this.pool =
      options.ownPool ?? new pg.Pool({ ...clientConfig(options), max: options.pool, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
    // An idle pooled connection that dies emits 'error' on the pool; the next query reconnects.
    if (this.ownsPool) this.pool.on('error', () => undefined);
    // The LISTEN connection: with the application's pool, opened with that pool's settings.
    const listenConfig: pg.ClientConfig =
      options.ownPool === undefined ? clientConfig(options) : { ...(options.ownPool.options as pg.ClientConfig) };
    this.listener = new ReleaseListener(
      () => {
        const client = new pg.Client({ ...listenConfig, statement_timeout: options.statementTimeoutMs });
        client.on('error', () => undefined);
        return client;
      },
      releaseChannel,
      options.connectTimeoutMs + options.statementTimeoutMs,
    );
    this.election = new LeaseElection({
      sql: electionSql(options.table, options.schema),
      query: async (action, key, text, params) => (await this.run(action, key, () => this.pool.query(text, [...params]))).rows,
      waitForChange: (key, maxWaitMs, signal) => this.waitForChange(key, maxWaitMs, signal),
    });
  }

  /** Waits to lead `request.key`: the lease row with the candidate's id beside it (election.ts). */
  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    return this.election.campaign(request, deadline, signal);
  }

  leader(key: string): Promise<string | undefined> {
    return this.election.leader(key);
  }

  /** One statement's deadline (connect + statement + slack); core's wait bound is waitMs + this. */
  get callTimeoutMs(): number {
    return this.deadlineMs;
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const token = randomToken();
    const result = await this.run(
      'acquire',
      request.key,
      () => this.pool.query<{ fence: string | null; remaining_ms: number | null }>(this.sql.acquire, [request.key, token, request.ttlMs]),
      // Given up on (a frozen server answers late): delete this attempt's row, if it made one, so no
      // lease is left for the whole ttl (issue 14). Deleting by its random token is always safe.
      () => this.release({ key: request.key, owner: request.owner, token }),
      request.ttlMs,
    );
    const row = result.rows[0];
    if (row?.fence === null || row?.fence === undefined) {
      return row?.remaining_ms === null || row?.remaining_ms === undefined
        ? { acquired: false }
        : { acquired: false, retryAfterMs: Math.max(0, row.remaining_ms) };
    }
    return { acquired: true, grant: { key: request.key, owner: request.owner, token, fence: Number(row.fence) } };
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    const result = await this.run('renew', grant.key, () => this.pool.query(this.sql.renew, [grant.key, grant.token, ttlMs]));
    return result.rowCount === 1;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    if (grants.length === 0) return [];
    const result = await this.run('renew', grants.length === 1 ? grants[0]!.key : undefined, () =>
      this.pool.query<{ key: string; owner: string }>(this.sql.renewMany, [
        grants.map((g) => g.key),
        grants.map((g) => g.token),
        [...ttlMs],
      ]),
    );
    const renewed = new Set(result.rows.map((row) => `${row.owner}\u0000${row.key}`));
    return grants.map((grant) => renewed.has(`${grant.token}\u0000${grant.key}`));
  }

  async release(grant: Grant): Promise<boolean> {
    const result = await this.run('release', grant.key, () =>
      this.pool.query<{ live: boolean }>(this.sql.release, [grant.key, grant.token]),
    );
    return result.rows[0]?.live === true;
  }

  waitForChange(key: string, maxWaitMs: number, signal: AbortSignal): Promise<void> {
    return this.listener.wait(key, maxWaitMs, signal, async () => {
      const result = await this.run('wait', key, () => this.pool.query<{ free: boolean }>(this.sql.isFree, [key]));
      return result.rows[0]?.free === true;
    });
  }

  close(): Promise<void> {
    this.closed.abort(new Error('the backend is closed'));
    this.closing ??= Promise.all([
      this.listener.close(),
      this.ownsPool ? withDeadline(this.pool.end(), 1_000).catch(() => undefined) : undefined,
    ]).then(() => undefined);
    return this.closing;
  }

  /** Creates the table once per backend, lazily; a failed attempt is retried by the next call. */
  private ensureSchema(): Promise<void> {
    this.schema ??= (async () => {
      for (const statement of this.sql.schema) {
        try {
          await this.pool.query(statement);
        } catch (error) {
          if (!isAlreadyExists(error)) throw error; // two backends racing on IF NOT EXISTS
        }
      }
    })().catch((error: unknown) => {
      this.schema = undefined;
      throw error;
    });
    return this.schema;
  }

  private async run<T>(
    action: string,
    key: string | undefined,
    operation: () => Promise<T>,
    undo?: () => Promise<unknown>,
    undoWithinMs?: number,
  ): Promise<T> {
    if (this.closing) throw new BackendUnavailableError(action, { key, backend: this.name, cause: new Error('the backend is closed') });
    const guarded = (): Promise<T> =>
      guardCall(() => this.ensureSchema().then(operation), {
        action,
        key,
        backend: this.name,
        endpoint: this.endpoint,
        timeoutMs: this.deadlineMs,
        undo: undo && (() => undo()),
        // Retried until the server answers (a pool: the undo may reach it before the attempt, and
        // "nothing found" is confirmed once more), within the attempt's ttl, until close().
        undoWithinMs,
        closed: this.closed.signal,
      });
    return this.gate.run(guarded).catch((error: unknown) => {
      // The gate's own queue deadline, untyped: the guard types everything else.
      throw error instanceof DeadboltError ? error : new BackendUnavailableError(action, { key, backend: this.name, cause: error });
    });
  }
}

// The pool keeps the connection string (and its password): print the mode only.
inspectSafely(LeaseBackend, (backend) => ({ name: backend.name }));
