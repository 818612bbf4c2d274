import { InvalidArgumentError } from '@deadbolt/core/adapter';
import type pg from 'pg';
import type { FenceNames } from '../../fence.js';
import { createOnce } from '../../ddl.js';

/**
 * A semaphore's `permits` in advisory mode (issue 16), so a client passing another number for a
 * semaphore in use is refused with InvalidArgumentError, as on Redis `fair` and ZooKeeper.
 *
 * Recorded in `<fence table>_permits` (gate id, key, permits), written and judged ONLY by a session
 * inside the semaphore's gate (semaphore.ts), the exclusive advisory lock every acquirer
 * passes one at a time before it may take a slot. That makes check-then-take atomic without a
 * transaction: nobody can take a slot of the key, nor write its record, between our read and our
 * slot. A record is "in use" while anyone holds the semaphore's in-use lock (key, "in use"), a
 * shared advisory lock every permit's session takes beside its slot before it leaves the gate and
 * lets go of with it: one id to look up in pg_locks whatever `permits` is (a list of every slot's
 * id cost time and memory in proportion to `permits`, and a billion of them ran the heap out). Only
 * a gate holder takes it, so "not held" cannot turn into "held" under us, and the release that
 * races our look at pg_locks only makes a refusal that was true when we looked. A record nobody
 * holds the in-use lock of (its holders crashed, or the last release found the gate busy) is stale
 * and replaced. The last holder's release clears the record, inside the gate too, tried and never
 * waited for (a release must not queue behind acquirers; the next acquirer re-judges a stale record
 * anyway). Waiters queued at the gate are not judged until they are inside it: the first inside records.
 */
export function advisoryPermitsSql(names: FenceNames) {
  const inUse = (id: string) =>
    `EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
       AND (classid::bigint << 32 | objid::bigint) = ${id})`;
  const release = `CREATE FUNCTION ${names.permitRelease}(gate bigint, slot bigint, in_use bigint) RETURNS boolean
LANGUAGE plpgsql AS $fn$
-- Our slot and our share of the in-use lock go; the last holder's release clears the record, inside
-- the gate (tried, never waited for). A session lock outlives an error here: the caller ends the
-- session on any error, and on false.
DECLARE ok boolean;
BEGIN
  ok := pg_advisory_unlock(slot);
  ok := pg_advisory_unlock_shared(in_use) AND ok;
  IF ok AND pg_try_advisory_lock(gate) THEN
    DELETE FROM ${names.permits} p WHERE p.gate_id = gate AND NOT ${inUse('in_use')};
    PERFORM pg_advisory_unlock(gate);
  END IF;
  RETURN ok;
END $fn$`;
  return {
    schema: [
      `CREATE TABLE IF NOT EXISTS ${names.permits} (gate_id bigint PRIMARY KEY, key text NOT NULL, permits integer NOT NULL)`,
      createOnce(names.permitRelease, '(bigint, bigint, bigint)', release),
    ],
    /** Inside the gate: records $3 when nothing is recorded, and answers the record ($1 gate id, $2 key). */
    record: `WITH recorded AS (INSERT INTO ${names.permits} (gate_id, key, permits) VALUES ($1::bigint, $2, $3)
        ON CONFLICT (gate_id) DO NOTHING RETURNING permits)
      SELECT permits FROM recorded UNION ALL SELECT permits FROM ${names.permits} WHERE gate_id = $1::bigint`,
    /** Inside the gate: replaces a stale record (its in-use lock $4 not held) with $3. One row when replaced. */
    replace: `UPDATE ${names.permits} SET permits = $3, key = $2 WHERE gate_id = $1::bigint AND NOT ${inUse('$4::bigint')}`,
    /**
     * Inside the gate, with a slot just taken: our share of the in-use lock ($1), then out of the
     * gate ($2). The CTE runs first, so nobody enters the gate before the share is held.
     */
    leaveGate: `WITH in_use AS MATERIALIZED (SELECT pg_advisory_lock_shared($1::bigint))
      SELECT pg_advisory_unlock($2::bigint) AS ok FROM in_use`,
    /** $1 gate id, $2 our slot's id, $3 the in-use lock's id. */
    release: `SELECT ${names.permitRelease}($1::bigint, $2::bigint, $3::bigint) AS ok`,
  };
}

export type AdvisoryPermitsSql = ReturnType<typeof advisoryPermitsSql>;

/**
 * Run by a session inside the gate: records `permits`, or accepts the same record, or replaces a
 * stale one; throws InvalidArgumentError when the semaphore is in use with another size.
 */
export async function checkPermits(
  client: pg.Client,
  sql: AdvisoryPermitsSql,
  semaphore: {
    readonly key: string;
    readonly gate: string;
    readonly inUse: string;
    readonly permits: number;
    readonly backend: string;
  },
): Promise<void> {
  const { key, gate, permits } = semaphore;
  const found = await client.query<{ permits: number }>(sql.record, [gate, key, permits]);
  const recorded = found.rows[0]?.permits;
  if (recorded === permits) return;
  // Nobody else writes inside the gate, so the insert or the read finds the row: a broken invariant, not bad input.
  if (recorded === undefined) throw new Error('the semaphore record was neither written nor found');
  const replaced = await client.query(sql.replace, [gate, key, permits, semaphore.inUse]);
  if (replaced.rowCount === 1) return;
  throw new InvalidArgumentError(
    'permits',
    `the semaphore is in use with ${recorded} permits, not ${permits}; every client of one key must pass the same permits`,
    { key, backend: semaphore.backend },
  );
}
