import type pg from 'pg';

/**
 * Advisory-mode fences without a write per grant.
 *
 * A fence is `epoch * 2^36 + counter`, i.e. the pair (epoch, counter) compared lexicographically:
 * - `counter` is `nextval` of one sequence, taken by the granted session IN THE STATEMENT THAT TOOK
 *   THE LOCK (after the grant). Within one server incarnation nextval is linearizable, and the next
 *   holder of a key is granted only after the previous holder unlocked, which is after the previous
 *   holder's nextval: so the counter of each holder of a key is larger than its predecessor's.
 *   A sequence costs no table write: PostgreSQL logs it once per 32 values (SEQ_LOG_VALS).
 * - `epoch` guards crashes. After a crash nextval may hand out again values it gave before (a value
 *   from a logged-ahead range whose WAL record was not flushed yet), so the counter alone is not
 *   crash-safe. Every session reads the epoch once, from an UNLOGGED table, which PostgreSQL
 *   empties after a crash (and which is empty on a promoted standby). The first session to find it
 *   empty starts a new epoch: max(epoch) + 1 in a logged table, committed with synchronous_commit
 *   on, and resets the counter to 1, under a table lock so only one session does it. Every fence of
 *   the new incarnation therefore has a larger epoch than any fence given before the crash, and
 *   as `counter < 2^36` (checked per grant) the single number compares like the pair.
 *   A clean restart keeps the unlogged table (and the sequence, flushed at shutdown): same epoch.
 *
 * Why not one epoch per session with a per-session counter: an older session (smaller epoch) can
 * take a key after a newer one released it and would hand out a smaller fence. The counter must be
 * shared and ordered with the grants, which nextval in the grant's statement is.
 *
 * Limits: 2^36 (6.9e10) grants per server incarnation, 2^17 epochs (restarts after crashes) in a
 * database's life, so fences stay exact JavaScript numbers (< 2^53). Nobody may touch these tables.
 */
export const counterBits = 36;
const counterLimit = 2 ** counterBits;

export interface FenceNames {
  readonly epochs: string;
  readonly live: string;
  readonly sequence: string;
  /** Advisory elections: who leads each key, created on the first election (modes/advisory/election.ts). */
  readonly leaders: string;
  /** Advisory semaphores: each one's permits while in use, created on the first semaphore (modes/advisory/permits.ts). */
  readonly permits: string;
  /** ... and the function a permit is released with (v2: the semaphore's in-use lock, not a list of its slots). */
  readonly permitRelease: string;
  /** The mutex's blocking wait that reports queueing as it starts (modes/advisory/wait.ts). */
  readonly wait: string;
}

/** Quoted identifiers derived from the validated fence table name (at most 63 bytes each). */
export function fenceNames(fenceTable: string, schema?: string): FenceNames & { readonly schema?: string } {
  const base = fenceTable.slice(0, 55);
  const qualifier = schema === undefined ? '' : `"${schema}".`;
  return {
    epochs: `${qualifier}"${base}_epochs"`,
    live: `${qualifier}"${base}_live"`,
    sequence: `${qualifier}"${base}_seq"`,
    leaders: `${qualifier}"${base}_leaders"`,
    permits: `${qualifier}"${base}_permits"`,
    permitRelease: `${qualifier}"${fenceTable.slice(0, 44)}_permit_release_v2"`,
    wait: `${qualifier}"${fenceTable.slice(0, 44)}_advisory_wait_v1"`,
    ...(schema === undefined ? {} : { schema }),
  };
}

export function fenceSchema(names: FenceNames & { readonly schema?: string }): string[] {
  return [
    ...(names.schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS "${names.schema}"`]),
    `CREATE TABLE IF NOT EXISTS ${names.epochs} (epoch bigint PRIMARY KEY, started_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE UNLOGGED TABLE IF NOT EXISTS ${names.live} (epoch bigint PRIMARY KEY)`,
    `CREATE SEQUENCE IF NOT EXISTS ${names.sequence} NO CYCLE`,
  ];
}

/** The epoch of this server incarnation, starting one if the crash-emptied table says so. One query on the common path. */
export async function readEpoch(client: pg.Client, names: FenceNames): Promise<number> {
  const current = await client.query<{ epoch: string }>(`SELECT epoch::text AS epoch FROM ${names.live} LIMIT 1`);
  if (current.rows[0] !== undefined) return Number(current.rows[0].epoch);
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL synchronous_commit = on');
    // Self-conflicting: concurrent first sessions queue here and the later ones find the new epoch.
    await client.query(`LOCK TABLE ${names.epochs} IN SHARE ROW EXCLUSIVE MODE`);
    const again = await client.query<{ epoch: string }>(`SELECT epoch::text AS epoch FROM ${names.live} LIMIT 1`);
    let epoch = again.rows[0]?.epoch;
    if (epoch === undefined) {
      const started = await client.query<{ epoch: string }>(
        `INSERT INTO ${names.epochs} (epoch) SELECT coalesce(max(epoch), 0) + 1 FROM ${names.epochs} RETURNING epoch::text AS epoch`,
      );
      epoch = started.rows[0]!.epoch;
      await client.query(`SELECT setval('${names.sequence}', 1, false)`);
      await client.query(`INSERT INTO ${names.live} (epoch) VALUES ($1)`, [epoch]);
    }
    await client.query('COMMIT');
    return Number(epoch);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** The fence of a grant, or undefined when this incarnation's counter space is used up. */
export function fenceOf(epoch: number, counter: string): number | undefined {
  const value = Number(counter);
  if (!(value < counterLimit)) return undefined;
  return epoch * counterLimit + value;
}
