import { BackendUnavailableError, closedError, onAbort, type AcquireRequest, type Grant } from '@deadbolt/core/adapter';
import type pg from 'pg';
import { clientConfig } from '../../connect.js';
import { DedicatedSession } from '../../dedicated-session.js';
import { fenceOf } from '../../fence.js';
import { advisoryLockId } from '../../key-hash.js';
import { localTokens } from '../../token.js';
import type { AdvisoryServer } from './server.js';

/**
 * Read-write locks in advisory mode: `pg_advisory_lock_shared` (read) and `pg_advisory_lock` (write)
 * on the mutex's SHA-256-derived id, as madelson/DistributedLock does. PostgreSQL's lock manager
 * queues a request that conflicts with the holders OR with the waiters ahead of it (lock.c, the
 * waitMask check), so a reader arriving behind a waiting writer waits too: FIFO across modes, and
 * a writer's release wakes every reader queued behind it at once. Neither side starves.
 *
 * Each hold has a session of its own (up to 8 sessions that hold nothing are kept for the next hold,
 * and only after their unlock was confirmed; not the mutex's multiplexed pool: a session never conflicts
 * with its own advisory locks, so two owners' holds must not share one), except a downgrade: the
 * read is taken on the writer's own session (a session's shared request beside its exclusive
 * hold is granted at once), so after the write is unlocked the shared hold keeps queued writers out.
 * A session that ends (crash, pg_terminate_backend, dropped connection) frees its holds on the
 * server at once and reports them lost here.
 */
type Mode = 'read' | 'write' | 'permit';

/** A session of its own for one hold (two, for a downgrade: see above), with the tokens it holds. */
export class Connection extends DedicatedSession {
  readonly holds = new Set<string>();
}

interface Hold {
  readonly id: string;
  readonly mode: Mode;
  readonly request: AcquireRequest;
  readonly connection: Connection;
  grant: Grant | undefined;
  /** The statement that lets go of it, when not the plain unlock of `id` (a permit: permits.ts). */
  readonly unlock?: { readonly text: string; readonly values: readonly unknown[] };
}

const maxTimeoutMs = 2 ** 31 - 1 - 60_000;
/** Sessions kept open with nothing held, for the next hold (a new session costs a connect and a setup query). */
const maxIdleSessions = 8;

export class AdvisoryReadWrite {
  private readonly holds = new Map<string, Hold>();
  private readonly nextToken = localTokens();
  /** Sessions that hold nothing (every lock they took was unlocked and confirmed): reused first. */
  private readonly idle: Connection[] = [];
  protected closed = false;

  constructor(protected readonly server: AdvisoryServer) {}

  protected get backendName(): string {
    return this.server.name;
  }

  /** One attempt (`wait` false) or a wait in the server's queue until `deadline`; undefined when not granted. */
  async take(
    request: AcquireRequest,
    mode: Mode,
    downgradeOf: Grant | undefined,
    wait: boolean,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<Grant | undefined> {
    if (this.closed) throw closedError('acquire', request.key, this.backendName);
    const { options, names } = this.server;
    const id = advisoryLockId(request.key, options.namespace).toString();
    const writer = downgradeOf === undefined ? undefined : this.holds.get(downgradeOf.token);
    const connection = writer && !writer.connection.ended ? writer.connection : await this.connect(request.key);
    const fn = mode === 'read' ? 'pg_advisory_lock_shared' : 'pg_advisory_lock';
    let detach: (() => void) | undefined;
    try {
      let counter: string | null | undefined;
      if (!wait && !writer) {
        const result = await connection.client.query<{ counter: string | null }>(
          `SELECT CASE WHEN ${fn.replace('pg_advisory_lock', 'pg_try_advisory_lock')}($1::bigint) THEN nextval('${names.sequence}')::text END AS counter`,
          [id],
        );
        counter = result.rows[0]?.counter;
      } else {
        // A downgrade waits too, but is granted at once: a try would refuse it behind a queued writer
        // (lock.c's waitMask check), while a blocking request from a session that already holds a
        // lock conflicting with a waiter is put ahead of that waiter (ProcSleep) and, as a session
        // never conflicts with itself, granted. It is never cancelled by ending the session, which
        // would end the write hold too; lock_timeout bounds it.
        if (!writer && signal !== undefined) {
          // A cancel is the session's end: the server drops the queued request with it.
          const cancel = (): void => void connection.end(100);
          if (signal.aborted) cancel();
          else detach = onAbort(signal, cancel);
        }
        const waitMs = writer ? options.statementTimeoutMs : Math.min(maxTimeoutMs, Math.max(1, deadline - Date.now()));
        // Integers we computed (no user text): safe to inline, as SET takes no parameters.
        const results = (await connection.client.query(
          `SET LOCAL statement_timeout = ${waitMs + options.statementTimeoutMs}; SET LOCAL lock_timeout = ${waitMs};
           WITH granted AS (SELECT ${fn}(${id}::bigint)) SELECT nextval('${names.sequence}')::text AS counter FROM granted`,
        )) as unknown as pg.QueryResult<{ counter: string }>[];
        counter = results[2]?.rows[0]?.counter;
      }
      if (signal?.aborted && !writer) {
        this.dropIfIdle(connection);
        return undefined;
      }
      if (counter === null || counter === undefined) {
        this.park(connection); // the try took nothing: the session is clean
        return undefined;
      }
      return this.adopt(request, mode, id, connection, counter);
    } catch (error) {
      this.dropIfIdle(connection);
      // 55P03 lock_not_available (lock_timeout) or a cancel by abort: not granted, nothing held.
      if ((error as { code?: unknown } | null)?.code === '55P03' || signal?.aborted) return undefined;
      throw new BackendUnavailableError('acquire', { key: request.key, backend: this.backendName, cause: error });
    } finally {
      detach?.();
    }
  }

  /** Records a granted hold on `connection`; `counter` is the fence counter taken with it. */
  protected adopt(
    request: AcquireRequest,
    mode: Mode,
    id: string,
    connection: Connection,
    counter: string,
    unlock?: Hold['unlock'],
  ): Grant {
    const fence = fenceOf(connection.epoch, counter);
    const grant: Grant = {
      key: request.key,
      owner: request.owner,
      token: this.nextToken(),
      ...(fence === undefined ? {} : { fence }),
    };
    this.holds.set(grant.token, { id, mode, request, connection, grant, ...(unlock === undefined ? {} : { unlock }) });
    connection.holds.add(grant.token);
    return grant;
  }

  /** The hold lives while its session does: one trivial query proves it. */
  async renew(grant: Grant): Promise<boolean> {
    const hold = this.holds.get(grant.token);
    if (!hold || hold.connection.ended) return false;
    try {
      await hold.connection.client.query('SELECT 1');
      return !hold.connection.ended && this.holds.has(grant.token);
    } catch (error) {
      throw new BackendUnavailableError('renew', { key: grant.key, backend: this.backendName, cause: error });
    }
  }

  async release(grant: Grant): Promise<boolean> {
    const hold = this.holds.get(grant.token);
    if (!hold) return false;
    this.holds.delete(grant.token);
    const { connection } = hold;
    connection.holds.delete(grant.token);
    if (connection.ended) return false;
    try {
      const fn = hold.mode === 'read' ? 'pg_advisory_unlock_shared' : 'pg_advisory_unlock';
      const { text, values } = hold.unlock ?? { text: `SELECT ${fn}($1::bigint) AS ok`, values: [hold.id] };
      const result = await connection.client.query<{ ok: boolean }>(text, [...values]);
      const ok = result.rows[0]?.ok === true;
      // Reused only when the unlock is confirmed: a session that might still hold the lock would
      // grant it again to its next user (a session never conflicts with itself). Else it ends.
      if (ok) this.park(connection);
      else this.dropIfIdle(connection);
      return ok;
    } catch (error) {
      // Unknown outcome: end the session, which certainly lets go (its other hold is reported lost).
      void connection.lose(new Error('the connection closed'));
      throw new BackendUnavailableError('release', { key: grant.key, backend: this.backendName, cause: error });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const connections = new Set([...this.holds.values()].map((hold) => hold.connection).concat(this.idle.splice(0)));
    this.holds.clear();
    await Promise.all([...connections].map((connection) => connection.end()));
  }

  protected async connect(key: string): Promise<Connection> {
    for (let reused = this.idle.pop(); reused !== undefined; reused = this.idle.pop()) {
      if (!reused.ended) return reused;
    }
    const connection: Connection = new Connection(clientConfig(this.server.options), (cause) => {
      for (const token of [...connection.holds]) {
        const hold = this.holds.get(token);
        this.holds.delete(token);
        if (hold?.grant) hold.request.onLost(hold.grant, new Error(`the session holding "${hold.request.key}" ended: ${cause.message}`));
      }
      connection.holds.clear();
    });
    try {
      await connection.open({}, (client: pg.Client) => this.server.prepare(client));
      return connection;
    } catch (error) {
      throw new BackendUnavailableError('connect', { key, backend: this.backendName, cause: error });
    }
  }

  /** A session that holds nothing goes back to the idle list (or ends, past maxIdleSessions). */
  protected park(connection: Connection): void {
    if (connection.ended || connection.holds.size > 0) return;
    if (this.closed || this.idle.length >= maxIdleSessions) this.dropIfIdle(connection);
    else this.idle.push(connection);
  }

  /** Ends a session that holds nothing: the way out after an error or an abort, when its state is unknown. */
  protected dropIfIdle(connection: Connection): void {
    if (connection.holds.size > 0 || connection.ended) return;
    void connection.end();
  }
}
