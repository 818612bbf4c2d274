/**
 * `@deadbolt/fence/postgres`: the highest fence admitted per resource, kept in a table of the
 * database the data lives in, checked and raised inside the writer's own transaction. The row stays
 * locked until that transaction ends, so transactions of one resource commit in fence order.
 */
import { createHash } from 'node:crypto';
import { DeadboltError, InvalidArgumentError } from '@deadbolt/core';
import { StaleFenceError } from './errors.js';
import { checkFence, checkResource } from './validate.js';

/** What admitFence needs of a connection: pg's `query(text, values)`. A pg.Client, or a PoolClient checked out of a pool. */
export interface Queryable {
  query(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

export interface FenceTableOptions {
  /** The table of fences (a plain identifier, at most 63 characters). Default `deadbolt_admitted_fences`. */
  readonly table?: string;
  /** Its schema (a plain identifier); default: the first schema of the connection's search_path. */
  readonly schema?: string;
}

/** Not `deadbolt_fences`: the PostgreSQL lock adapter names its own objects after that (`deadbolt_fences_epochs`, ...). */
export const defaultFenceTable = 'deadbolt_admitted_fences';

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** The quoted, schema-qualified name of the table; bad names are refused before any I/O. */
function tableName(options: FenceTableOptions | undefined): string {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new InvalidArgumentError('options', 'expected an object such as { table: "deadbolt_admitted_fences" }');
  }
  const table = options?.table ?? defaultFenceTable;
  const schema = options?.schema;
  if (typeof table !== 'string' || !identifier.test(table)) {
    throw new InvalidArgumentError('table', 'expected a plain SQL identifier (letters, digits, _; at most 63)');
  }
  if (schema !== undefined && (typeof schema !== 'string' || !identifier.test(schema))) {
    throw new InvalidArgumentError('schema', 'expected a plain SQL identifier (letters, digits, _; at most 63)');
  }
  return schema === undefined ? `"${table}"` : `"${schema}"."${table}"`;
}

function checkQueryable(queryable: unknown): asserts queryable is Queryable {
  if (queryable === null || typeof queryable !== 'object' || typeof (queryable as Queryable).query !== 'function') {
    throw new InvalidArgumentError('queryable', 'expected a pg.Client or a PoolClient (an object with query(text, values))');
  }
  // A pg.Pool runs each query on whichever connection is free, outside the caller's transaction:
  // the row lock would end with the statement and order nothing.
  if (typeof (queryable as { idleCount?: unknown }).idleCount === 'number') {
    throw new InvalidArgumentError(
      'queryable',
      'a pg.Pool runs each query outside your transaction; pass the client of the transaction (const client = await pool.connect(); BEGIN)',
    );
  }
}

/**
 * pg (versions with getTransactionStatus) says after each statement whether its session is in a
 * transaction block: idle after ours means the statement was its own transaction, and the row lock
 * has already ended. Checked after the statement, not before: a BEGIN queued but not yet answered counts as in one.
 */
function outsideTransaction(queryable: Queryable): void {
  const status = (queryable as { getTransactionStatus?: () => unknown }).getTransactionStatus?.();
  if (status === 'I') {
    throw new InvalidArgumentError(
      'queryable',
      'admitFence ran outside a transaction, so nothing orders the write that follows it; run BEGIN first, then admitFence, then the writes, then COMMIT',
    );
  }
}

/** Tables seen to exist, per connection: later calls skip the check. */
const known = new WeakMap<object, Set<string>>();

/** An advisory lock class of this package's own (two-int form): first creators of a table queue on it. */
const createLockClass = 0x64626663;

/**
 * Creates the fence table unless it exists. admitFence calls it on a connection's first use of the
 * table; call it from a migration to create the table ahead. Safe when first callers race: they
 * queue on a transaction-level advisory lock, and outside a transaction a creator that loses the
 * race finds the winner's table.
 */
export async function createFenceTable(queryable: Queryable, options?: FenceTableOptions): Promise<void> {
  const table = tableName(options);
  checkQueryable(queryable);
  await ensureTable(queryable, table);
}

/** unique_violation (pg_type's index), duplicate_table, duplicate_object (the row type). */
const alreadyCreated: ReadonlySet<string> = new Set(['23505', '42P07', '42710']);

async function ensureTable(queryable: Queryable, table: string): Promise<void> {
  const seen = known.get(queryable);
  if (seen?.has(table)) return;
  const present = await queryable.query('SELECT to_regclass($1) IS NOT NULL AS present', [table]);
  if ((present.rows[0] as { present?: boolean } | undefined)?.present !== true) {
    await queryable.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [createLockClass, table]);
    try {
      await queryable.query(
        `CREATE TABLE IF NOT EXISTS ${table} (key bytea PRIMARY KEY, resource text NOT NULL, fence bigint NOT NULL CHECK (fence >= 0))`,
        [],
      );
    } catch (error) {
      // Outside a transaction the advisory lock ends with its statement: a racing creator can win,
      // and this one fails on the catalog (the table, or its row type, already exists).
      if (!alreadyCreated.has(String((error as { code?: unknown }).code))) throw error;
    }
    // Not remembered: this transaction may yet roll the table back. The next call checks again.
    return;
  }
  if (seen === undefined) known.set(queryable, new Set([table]));
  else seen.add(table);
}

/**
 * The row's primary key: the SHA-256 of the resource's UTF-8 bytes. A btree entry holds at most
 * about 2.7 kB, so the resource itself (any length, stored exactly beside it) cannot be the key.
 */
function resourceKey(resource: string): Buffer {
  return createHash('sha256').update(resource, 'utf8').digest();
}

/**
 * Admits `fence` for `resource` inside the caller's transaction, before its writes: records it as
 * the resource's highest fence and keeps that row locked until the transaction ends. A smaller fence
 * than the recorded one throws StaleFenceError (roll back: the holder lost its lock); an equal one
 * is admitted (one holder writing several times). Bad input is an InvalidArgumentError before any
 * I/O; the connection's own errors (a serialization failure under REPEATABLE READ, a broken link)
 * pass through unchanged.
 */
export async function admitFence(queryable: Queryable, resource: string, fence: number, options?: FenceTableOptions): Promise<void> {
  checkResource(resource);
  checkFence(fence, resource);
  const table = tableName(options);
  checkQueryable(queryable);
  await ensureTable(queryable, table);
  const key = resourceKey(resource);
  // One statement decides and locks: the insert, or the update of a row whose fence is not newer.
  // A row it does not update is locked all the same (ON CONFLICT DO UPDATE locks the conflicting
  // row whatever its WHERE says), so the newer fence read next is committed and stays until we end.
  const admitted = await queryable
    .query(
      `INSERT INTO ${table} AS f (key, resource, fence) VALUES ($1::bytea, $2, $3::bigint)
     ON CONFLICT (key) DO UPDATE SET fence = EXCLUDED.fence WHERE f.fence <= EXCLUDED.fence
     RETURNING f.fence`,
      [key, resource, String(fence)],
    )
    .catch((error: unknown) => {
      // Gone (created in a transaction that rolled back, or dropped): the next call creates it again.
      if ((error as { code?: unknown }).code === '42P01') known.get(queryable)?.delete(table);
      throw error;
    });
  outsideTransaction(queryable);
  if (admitted.rows.length > 0) return;
  const newer = await queryable.query(`SELECT fence::text AS fence FROM ${table} WHERE key = $1::bytea`, [key]);
  const recorded = (newer.rows[0] as { fence?: string } | undefined)?.fence;
  if (recorded === undefined)
    throw new DeadboltError(`the fence row of "${resource}" was refused and then not found in ${table}`, { key: resource });
  throw new StaleFenceError(resource, fence, Number(recorded));
}
