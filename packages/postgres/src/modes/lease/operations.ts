import type { LockHolder } from '@deadbolt/core';
import { forcedMarkerMs, type BackendInspection, type Grant } from '@deadbolt/core/adapter';
import { operationsSql } from './operations-sql.js';
import { schemaOnce } from '../../schema-once.js';
import type { StatementPool } from '../../statement-pool.js';

/** Keys listKeys reads per statement: a page, so a large table is never read into memory at once. */
const pageSize = 500;

interface HoldRow {
  readonly kind: LockHolder['kind'];
  readonly fence: string;
  readonly ttl_ms: number;
}

/**
 * The operator API on the lease mode: every hold is a row with a server-clock expiry, so inspect,
 * forceRelease and list are reads and deletes of rows. Owners are absent: a row keeps only the
 * grant's random token. Called through the backend's guarded statements (typed errors, deadlines).
 */
export class LeaseOperations {
  private readonly sql: ReturnType<typeof operationsSql>;
  private readonly ensureMarkers: (key: string) => Promise<void>;

  constructor(
    private readonly statements: StatementPool,
    table: string,
    schema: string | undefined,
  ) {
    this.sql = operationsSql(table, schema);
    this.ensureMarkers = schemaOnce((key: string) => this.statements.query('forceRelease', key, this.sql.schema, []));
  }

  async inspect(key: string): Promise<BackendInspection> {
    const result = await this.statements.query<{ holders: HoldRow[]; waiters: number }>('inspect', key, this.sql.inspect, [key]);
    const row = result.rows[0];
    const holders: LockHolder[] = (row?.holders ?? []).map((hold) => ({
      kind: hold.kind,
      fence: Number(hold.fence),
      ttlLeftMs: Math.max(1, hold.ttl_ms),
    }));
    const waiters = row?.waiters ?? 0;
    return waiters > 0 ? { holders, waiters } : { holders };
  }

  /**
   * One transaction: the key's lock row is freed and handed to its first live waiter (or deleted,
   * waking election followers), every read, write and permit hold is deleted and the kinds queue
   * granted on, and each removed live token gets a marker naming `by` for 10 minutes. True when a
   * live hold was removed.
   */
  async forceRelease(key: string, by: string): Promise<boolean> {
    await this.ensureMarkers(key);
    const force = this.sql.force;
    return this.statements.run('forceRelease', key, async (client) => {
      const send = <R extends Record<string, unknown>>(text: string, params: readonly unknown[]) =>
        this.statements.send<R>(client, text, params);
      await client.query('BEGIN');
      try {
        const removed: string[] = [];
        const [lock] = (await send<{ owner: string; live: boolean }>(force.lockRow, [key])).rows;
        if (lock !== undefined) {
          if (lock.owner !== '' && lock.live) removed.push(lock.owner);
          await send(force.freeRow, [key]);
          const [granted] = (await send<{ granted: boolean }>(force.grantNext, [key])).rows;
          if (granted?.granted !== true) await send(force.deleteRow, [key]);
        }
        await send(force.kindsRow, [key]);
        const holds = (await send<{ token: string; live: boolean }>(force.deleteHolds, [key])).rows;
        for (const hold of holds) if (hold.live) removed.push(hold.token);
        await send(force.grantKinds, [key]);
        await send(force.tidyKinds, [key]);
        if (removed.length > 0) await send(force.mark, [removed, by, forcedMarkerMs]);
        await client.query('COMMIT');
        return removed.length > 0;
      } catch (error) {
        // Back to the pool clean (a dropped connection rolls back by itself).
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }

  async forcedBy(grant: Grant): Promise<string | undefined> {
    await this.ensureMarkers(grant.key);
    const result = await this.statements.query<{ forced_by: string }>('renew', grant.key, this.sql.forcedBy, [grant.token]);
    return result.rows[0]?.forced_by;
  }

  /** The live keys under `prefix`, a page per statement, in byte order. */
  async *listKeys(prefix: string): AsyncIterable<string> {
    let after = '';
    for (;;) {
      const result = await this.statements.query<{ key: string }>('list', undefined, this.sql.listKeys, [prefix, after, pageSize]);
      for (const row of result.rows) yield row.key;
      if (result.rows.length < pageSize) return;
      after = result.rows[result.rows.length - 1]!.key;
    }
  }

  /** The election's leader (the candidate id written beside the live lease) and its fence as the term. */
  async leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    const result = await this.statements.query<{ id: string; fence: string }>('leader', key, this.sql.leaderInfo, [key]);
    const row = result.rows[0];
    return row === undefined ? undefined : { id: row.id, term: Number(row.fence) };
  }
}
