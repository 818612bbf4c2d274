import type { AcquireRequest, AttemptResult, CampaignRequest, Capabilities, Grant, TermGrant } from '@deadbolt/core/adapter';
import { electionSql, LeaseElection } from '../election.js';
import { leaseSql } from '../sql.js';
import { randomToken } from '../token.js';
import { baseCapabilities, type ModeContext, type PostgresLockMode } from './mode.js';

export const leaseCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  lease: 'ttl',
  // Elections on the lease row, the fence as term, the leader's id beside it (election.ts).
  election: true,
});

/**
 * 'postgres:lease': a row per held lock with a server-clock expiry, taken and handed over by one
 * conditional upsert (INSERT ... ON CONFLICT DO UPDATE ... WHERE expires_at < now()). Release deletes
 * only our row (owner = the grant's random token) and NOTIFYs waiters in the same statement.
 */
export class LeaseMode implements PostgresLockMode {
  private readonly sql: ReturnType<typeof leaseSql>;
  private readonly election: LeaseElection;

  constructor(private readonly context: ModeContext) {
    const { options, statements } = context;
    this.sql = leaseSql(options.table, options.schema);
    statements.requireSchema(this.sql.schema);
    this.election = new LeaseElection({
      sql: electionSql(options.table, options.schema),
      query: async <R extends Record<string, unknown>>(action: string, key: string, text: string, params: readonly unknown[]) =>
        (await statements.query(action, key, text, params)).rows as R[],
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

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const token = randomToken();
    const result = await this.context.statements.query<{ fence: string | null; remaining_ms: number | null }>(
      'acquire',
      request.key,
      this.sql.acquire,
      [request.key, token, request.ttlMs],
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
    const result = await this.context.statements.query('renew', grant.key, this.sql.renew, [grant.key, grant.token, ttlMs]);
    return result.rowCount === 1;
  }

  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    if (grants.length === 0) return [];
    const result = await this.context.statements.query<{ key: string; owner: string }>(
      'renew',
      grants.length === 1 ? grants[0]!.key : undefined,
      this.sql.renewMany,
      [grants.map((g) => g.key), grants.map((g) => g.token), [...ttlMs]],
    );
    const renewed = new Set(result.rows.map((row) => `${row.owner}\u0000${row.key}`));
    return grants.map((grant) => renewed.has(`${grant.token}\u0000${grant.key}`));
  }

  async release(grant: Grant): Promise<boolean> {
    const result = await this.context.statements.query<{ live: boolean }>('release', grant.key, this.sql.release, [grant.key, grant.token]);
    return result.rows[0]?.live === true;
  }

  waitForChange(key: string, maxWaitMs: number, signal: AbortSignal): Promise<void> {
    return this.context.listener.wait(key, maxWaitMs, signal, async () => {
      const result = await this.context.statements.query<{ free: boolean }>('wait', key, this.sql.isFree, [key]);
      return result.rows[0]?.free === true;
    });
  }

  /** Nothing of its own: the pool and the listener are the backend's. */
  async close(): Promise<void> {}
}
