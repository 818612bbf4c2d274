import {
  backoffDelayMs,
  InvalidArgumentError,
  onAbort,
  type AcquireRequest,
  type Grant,
  type MultiAttemptResult,
  type MultiDriver,
} from '@deadbolt/core/adapter';
import type pg from 'pg';
import { advisoryLockId } from '../../key-hash.js';
import type { AdvisoryMutex } from './mutex.js';
import { maxTimeoutMs, type AdvisoryServer } from './server.js';
import type { Session } from './sessions.js';

/**
 * Multi-key locks in advisory mode (issue 17, primitives.md §4.1): every key of the set on ONE
 * session, in ONE statement, in the one global order of their advisory ids (signed 64-bit, the
 * same on every client), so no two acquirers can wait on each other in a cycle (Havender's ordered
 * resources); the server's deadlock detector (deadlock_timeout) stays the backstop for cycles with
 * locks taken outside this order, and a detected deadlock is undone and retried.
 * - try: a recursive CTE takes the ids in order with pg_try_advisory_lock and stops at the first
 *   refusal; in the same statement the ids taken are unlocked again when any was refused, or a
 *   fence counter (nextval, after every grant) is drawn for each when all were granted.
 * - wait: pg_advisory_lock for each id in order, under SET LOCAL lock_timeout, on a session that
 *   holds nothing; a timeout or deadlock leaves it holding a prefix of the set, which
 *   pg_advisory_unlock_all() gives back (the session held nothing else), and an abort ends the
 *   session (the server drops its locks and its queued request with it).
 * Session-level advisory locks ignore rollback, which is why every failure path unlocks explicitly.
 */

interface Entry {
  readonly request: AcquireRequest;
  readonly id: string;
  readonly order: bigint;
}

/** The global order: by advisory id (namespace included), the order the server takes them in. */
export function byAdvisoryId(fullKeys: readonly string[], namespace: string): string[] {
  return fullKeys
    .map((key) => ({ key, id: advisoryLockId(key, namespace) }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map(({ key }) => key);
}

export function multiSql(sequence: string) {
  return {
    /** $1: the ids in order. busy: 1-based position of the first refused id; counters: one per id when all were granted. */
    tryAll: {
      name: 'deadbolt_try_all',
      // Each step reads its id by subscript (constant time in a bigint array without nulls): a join of
      // the step to the list of ids scanned the whole list per step, quadratic (10,000 keys took
      // longer than the statement timeout).
      text: `WITH RECURSIVE tried (n, id, ok) AS (
            SELECT s.n, s.id, pg_try_advisory_lock(s.id) FROM (SELECT 1 AS n, ($1::bigint[])[1] AS id) s
            WHERE cardinality($1::bigint[]) > 0
          UNION ALL
            SELECT s.n, s.id, pg_try_advisory_lock(s.id) FROM tried t, LATERAL (SELECT t.n + 1 AS n, ($1::bigint[])[t.n + 1] AS id) s
            WHERE t.n < cardinality($1::bigint[]) AND t.ok),
        verdict AS (SELECT count(*) FILTER (WHERE ok) = cardinality($1::bigint[]) AS granted, min(n) FILTER (WHERE NOT ok) AS busy FROM tried)
      SELECT v.busy::int AS busy,
             (SELECT array_agg(nextval('${sequence}')::text ORDER BY n) FROM tried WHERE v.granted) AS counters,
             (SELECT count(pg_advisory_unlock(id)) FROM tried WHERE ok AND NOT v.granted)::int AS undone
      FROM verdict v`,
    } satisfies pg.QueryConfig,
    /** After a failed wait: the session held nothing before it, so everything it holds now is the set's. */
    giveBack: 'SELECT pg_advisory_unlock_all()',
    unlockAll: { name: 'deadbolt_unlock_ids', text: 'SELECT count(pg_advisory_unlock(id))::int AS n FROM unnest($1::bigint[]) AS t(id)' },
    /** Ids and timeouts are integers we computed (no user text): inlined, as SET takes no parameters. */
    waitAll(ids: readonly string[], waitMs: number, statementTimeoutMs: number): string {
      return `SET LOCAL statement_timeout = ${waitMs + statementTimeoutMs}; SET LOCAL lock_timeout = ${waitMs};
        WITH granted AS MATERIALIZED (SELECT n, pg_advisory_lock(id) FROM unnest('{${ids.join(',')}}'::bigint[]) WITH ORDINALITY AS t(id, n))
        SELECT array_agg(nextval('${sequence}')::text ORDER BY n) AS counters FROM granted`;
    },
  };
}

/**
 * The multi-key driver. Its grants are plain locks of the mutex, which keeps them (renew, release,
 * a dead session's loss) and whose claims keep two owners here off one key.
 */
export class AdvisoryMulti implements MultiDriver {
  /** The statements (the package's mutant tests swap in broken ones). */
  sql: ReturnType<typeof multiSql>;

  constructor(
    private readonly server: AdvisoryServer,
    private readonly mutex: AdvisoryMutex,
  ) {
    this.sql = multiSql(server.names.sequence);
  }

  /** acquireAll's global order: by advisory id, the order the server takes a set in. */
  orderKeys(fullKeys: readonly string[]): readonly string[] {
    return byAdvisoryId(fullKeys, this.server.options.namespace);
  }

  /** One statement on one session: every key or none (grants in the order of `requests`). */
  async tryAcquireMany(requests: readonly AcquireRequest[]): Promise<MultiAttemptResult> {
    const entries = this.entries(requests);
    const label = labelOf(requests);
    const claimed = entries.find((entry) => this.mutex.isClaimed(entry.id));
    if (claimed !== undefined) return { acquired: false, busyKey: claimed.request.key };
    for (const entry of entries) this.mutex.claim(entry.id, entry.request);
    const ids = entries.map((entry) => entry.id);
    let session: Session | undefined;
    let granted = false;
    try {
      session = await this.server.pick('acquire', label, () => this.server.sessions.forStatement());
      const result = await session.query<{ busy: number | null; counters: string[] | null }>(this.sql.tryAll, [ids]);
      const row = result.rows[0];
      if (row?.counters === null || row?.counters === undefined || row.counters.length !== entries.length) {
        const busy = row?.busy === null || row?.busy === undefined ? undefined : entries[row.busy - 1];
        return { acquired: false, ...(busy === undefined ? {} : { busyKey: busy.request.key }) };
      }
      granted = true;
      return { acquired: true, grants: this.holdAll(entries, requests, session, row.counters) };
    } catch (error) {
      // The statement may have failed after some grants (advisory locks ignore rollback): unlock them.
      if (session !== undefined && !session.dead) void session.query(this.sql.unlockAll, [ids]).catch(() => undefined);
      throw lockTableFull(error, requests, this.server.name) ?? this.server.unavailable('acquire', label, error);
    } finally {
      if (!granted) for (const id of ids) this.mutex.unclaim(id);
    }
  }

  /**
   * A try first (the uncontended case costs one statement); when refused, the whole set waits in
   * the server's queues on a session that holds nothing, or polls when none may be parked.
   */
  async acquireMany(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<readonly Grant[] | undefined> {
    const label = labelOf(requests);
    for (let attempt = 1; !signal.aborted; attempt += 1) {
      const tried = await this.tryAcquireMany(requests);
      if (tried.acquired) return tried.grants;
      if (attempt === 1) requests[0]?.onContended?.();
      if (Date.now() >= deadline || signal.aborted) return undefined;
      const session = await this.server.pick('acquire', label, () => this.server.sessions.forWait());
      if (session !== undefined && !signal.aborted) {
        const waited = await this.waitAll(requests, session, deadline, signal);
        if (waited !== 'retry') return waited;
      }
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) return undefined;
      await abortableSleep(Math.min(remainingMs, backoffDelayMs(attempt)), signal);
    }
    return undefined;
  }

  /** The blocking statement. 'retry': a deadlock was detected and undone. */
  private async waitAll(
    requests: readonly AcquireRequest[],
    session: Session,
    deadline: number,
    signal: AbortSignal,
  ): Promise<readonly Grant[] | undefined | 'retry'> {
    const entries = this.entries(requests);
    const label = labelOf(requests);
    const waitMs = Math.min(maxTimeoutMs, Math.max(1, deadline - Date.now()));
    let cancelled = false;
    let settled = false;
    const cancel = (): void => {
      cancelled = true;
      this.server.cancelUntilSettled(session, () => settled);
    };
    session.blocked = true;
    const detach = onAbort(signal, cancel);
    if (signal.aborted) cancel();
    try {
      const results = (await session.query(
        this.sql.waitAll(
          entries.map((entry) => entry.id),
          waitMs,
          this.server.options.statementTimeoutMs,
        ),
        undefined,
        waitMs + this.server.options.connectTimeoutMs + 2 * this.server.options.statementTimeoutMs,
      )) as unknown as pg.QueryResult<{ counters: string[] | null }>[];
      settled = true;
      const counters = results[2]?.rows[0]?.counters;
      if (cancelled || signal.aborted || counters === null || counters === undefined || counters.length !== entries.length) {
        // Granted as the caller gave up: end the session, which lets every lock of the set go.
        await this.server.sessions.retire(session);
        return undefined;
      }
      session.blocked = false;
      return this.holdAll(entries, requests, session, counters);
    } catch (error) {
      settled = true;
      const code = (error as { code?: unknown } | null)?.code;
      if (cancelled) {
        await this.server.sessions.retire(session);
        return undefined;
      }
      // 55P03 lock_not_available (lock_timeout), 57014 statement_timeout, 40P01 deadlock_detected,
      // 53200 out_of_shared_memory (the lock table is full): the session holds a prefix of the set
      // and nothing else; give it back before anyone else uses it.
      if (code === '55P03' || code === '57014' || code === '40P01' || code === outOfSharedMemory) {
        try {
          await session.query(this.sql.giveBack);
          session.blocked = false;
        } catch {
          await this.server.sessions.retire(session);
        }
        const full = lockTableFull(error, requests, this.server.name);
        if (full !== undefined) throw full;
        return code === '40P01' && Date.now() < deadline ? 'retry' : undefined;
      }
      session.kill(error instanceof Error ? error : new Error(String(error)));
      throw this.server.unavailable('acquire', label, error);
    } finally {
      settled = true;
      detach();
    }
  }

  /** Every key of the set held on `session`; grants in the order of `requests`. */
  private holdAll(entries: readonly Entry[], requests: readonly AcquireRequest[], session: Session, counters: readonly string[]): Grant[] {
    const byKey = new Map<string, Grant>();
    entries.forEach((entry, index) => byKey.set(entry.request.key, this.mutex.hold(entry.id, entry.request, session, counters[index]!)));
    return requests.map((request) => byKey.get(request.key)!);
  }

  /** The requests in advisory-id order (core already sends them so; sorting again costs nothing). */
  private entries(requests: readonly AcquireRequest[]): Entry[] {
    const entries = requests.map((request) => {
      const order = advisoryLockId(request.key, this.server.options.namespace);
      return { request, id: order.toString(), order };
    });
    entries.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
    for (let i = 1; i < entries.length; i += 1) {
      // Two keys with one 64-bit id (probability 2^-64): they are one lock; refuse rather than take it twice.
      if (entries[i]!.order === entries[i - 1]!.order)
        throw this.server.unavailable(
          'acquire',
          labelOf(requests),
          new Error(`"${entries[i - 1]!.request.key}" and "${entries[i]!.request.key}" share one advisory id`),
        );
    }
    return entries;
  }
}

/** The keys an error names: a few of them, and how many more (a set may have thousands). */
function labelOf(requests: readonly AcquireRequest[]): string {
  const shown = requests.slice(0, 5).map((request) => request.key);
  return requests.length > shown.length ? `${shown.join(', ')} and ${requests.length - shown.length} more` : shown.join(', ');
}

const outOfSharedMemory = '53200';

/**
 * Every key of a set is one entry of the server's shared lock table, whose size is
 * max_locks_per_transaction x (max_connections + max_prepared_transactions + background slots)
 * for all sessions together: a set the table has no room for fails with out_of_shared_memory.
 * The caller has given back what the statement took; this names the limit instead of an outage.
 */
function lockTableFull(error: unknown, requests: readonly AcquireRequest[], backend: string): InvalidArgumentError | undefined {
  if ((error as { code?: unknown } | null)?.code !== outOfSharedMemory) return undefined;
  return new InvalidArgumentError(
    'keys',
    `${requests.length} keys are more advisory locks than the server's shared lock table has room for now (out of shared memory; ` +
      'it holds max_locks_per_transaction x (max_connections + max_prepared_transactions) locks for every session together): ' +
      'take fewer keys at once, or raise max_locks_per_transaction on the server. Nothing of the set was kept',
    { key: labelOf(requests), backend },
  );
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      detach();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const detach = onAbort(signal, done);
  });
}
