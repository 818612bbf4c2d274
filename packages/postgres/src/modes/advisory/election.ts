import {
  BackendUnavailableError,
  closedError,
  leaseValidUntil,
  onAbort,
  withDeadline,
  type CampaignRequest,
  type ElectionDriver,
  type Grant,
  type TermGrant,
} from '@deadbolt/core/adapter';
import type pg from 'pg';
import { clientConfig } from '../../connect.js';
import { DedicatedSession } from '../../dedicated-session.js';
import { counterBits, fenceOf, type FenceNames } from '../../fence.js';
import { advisoryLockId, advisoryLockParts } from '../../key-hash.js';
import { schemaOnce } from '../../schema-once.js';
import { randomToken } from '../../token.js';
import { maxTimeoutMs, type AdvisoryServer } from './server.js';
import { falseIfEnded } from './validate.js';

/**
 * Leader election in advisory mode (issue 17, primitives.md §4.2): a term is the session-level
 * advisory lock of the election's key (the mutex's id: a lock and an election of one name exclude
 * each other, as in lease mode), held on a session of its own, so the server ends the term with the
 * session. The term number is the advisory fence, epoch * 2^36 + nextval drawn after the grant in
 * the granting statement (fence.ts): strictly increasing across leaders and server crashes. The same
 * statement writes (advisory id, key, token, id, backend pid, term) into `<fence table>_leaders`; `leader()`
 * names the row's id only while that pid holds the key's advisory lock in pg_locks, so a dead
 * leader's row names nobody. Followers wait in the server's FIFO lock queue: a resignation (unlock)
 * or a dead leader's session hands over at once.
 *
 * Losing the term before another can start: the term's session runs with idle_session_timeout =
 * ttl (PostgreSQL 14+), so a leader that stops talking (paused, partitioned) has its session, and
 * its lock, ended by the server no sooner than ttl after its last statement ended; the client
 * declares the term lost at the send time of its last confirmed ping + ttl - drift
 * (`grant.validUntil`), which comes first. A session that ends for any other reason (crash,
 * pg_terminate_backend, restart) frees the lock at once and the client learns it when the socket
 * closes: fence the resources with the term.
 */

interface Term {
  readonly session: DedicatedSession;
  readonly id: string;
  readonly request: CampaignRequest;
  readonly grant: TermGrant & { validUntil: number };
}

/** Sets the session's idle_session_timeout (PostgreSQL 14+; older servers have none: the local deadline alone ends the term). */
const idleTimeout = (ms: number): string =>
  `CASE WHEN current_setting('server_version_num')::int >= 140000 THEN set_config('idle_session_timeout', '${Math.max(1, Math.floor(ms))}', false) END`;

export function advisoryElectionSql(names: FenceNames) {
  return {
    // Keyed by the advisory id (namespace and key), which two applications sharing the table never share.
    schema: `CREATE TABLE IF NOT EXISTS ${names.leaders} (lock_id bigint PRIMARY KEY, key text NOT NULL, token text NOT NULL, id text NOT NULL, pid int NOT NULL, term bigint NOT NULL)`,
    /**
     * Takes the key's lock (tried, or waited for under lock_timeout), draws the counter after the
     * grant and records the leader, in one statement; only a granted session gets
     * idle_session_timeout = `idleMs` (a refused try must not arm it: the session then sits idle
     * until its waiting statement, and a slow client lost its session there in CI).
     * Ids, epoch and timeouts are integers we computed; text goes through escapeLiteral (SET takes no parameters).
     */
    campaign(
      client: pg.Client,
      wait: { readonly waitMs: number; readonly statementTimeoutMs: number } | undefined,
      values: { readonly id: string; readonly epoch: number; readonly key: string; readonly token: string; readonly candidate: string },
      idleMs: number,
    ): string {
      const counter =
        wait === undefined
          ? `counter AS MATERIALIZED (SELECT CASE WHEN pg_try_advisory_lock(${values.id}::bigint) THEN nextval('${names.sequence}') END AS n)`
          : `granted AS MATERIALIZED (SELECT pg_advisory_lock(${values.id}::bigint)),
             counter AS MATERIALIZED (SELECT nextval('${names.sequence}') AS n FROM granted)`;
      return `${wait === undefined ? '' : `SET LOCAL statement_timeout = ${wait.waitMs + wait.statementTimeoutMs}; SET LOCAL lock_timeout = ${wait.waitMs};`}
        WITH ${counter},
        named AS (
          INSERT INTO ${names.leaders} (lock_id, key, token, id, pid, term)
          SELECT ${values.id}::bigint, ${client.escapeLiteral(values.key)}, ${client.escapeLiteral(values.token)}, ${client.escapeLiteral(values.candidate)},
                 pg_backend_pid(), ${values.epoch}::bigint * ${2 ** counterBits} + n FROM counter WHERE n IS NOT NULL
          ON CONFLICT (lock_id) DO UPDATE SET key = EXCLUDED.key, token = EXCLUDED.token, id = EXCLUDED.id, pid = EXCLUDED.pid, term = EXCLUDED.term
          RETURNING 1)
        SELECT n::text AS counter, (SELECT count(*) FROM named)::int AS named,
               CASE WHEN n IS NOT NULL THEN ${idleTimeout(idleMs)} END AS idle FROM counter`;
    },
    /** Confirms a waited-for term: restarts the server's idle clock and shortens it to the ttl. */
    confirm: (ttlMs: number): string => `SELECT ${idleTimeout(ttlMs)}`,
    /** Our row goes with our lock (only ours: by token), in one statement. */
    release: `WITH gone AS (DELETE FROM ${names.leaders} WHERE lock_id = $2::bigint AND token = $1) SELECT pg_advisory_unlock($2::bigint) AS ok`,
    /** The recorded leader, only while its session holds the key's advisory lock. */
    leader: `SELECT n.id FROM ${names.leaders} n WHERE n.lock_id = $1::bigint AND EXISTS (
        SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND l.pid = n.pid
          AND l.classid = $2::bigint::oid AND l.objid = $3::bigint::oid)`,
    /** The same, with the leader's term (observe()'s term). */
    leaderInfo: `SELECT n.id, n.term::text AS term FROM ${names.leaders} n WHERE n.lock_id = $1::bigint AND EXISTS (
        SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND l.pid = n.pid
          AND l.classid = $2::bigint::oid AND l.objid = $3::bigint::oid)`,
  };
}

/** The advisory election driver: every term it grants it also keeps (renew, validate, release). */
export class AdvisoryElection implements ElectionDriver {
  /** The statements (the package's mutant tests swap in broken ones). */
  sql: ReturnType<typeof advisoryElectionSql>;
  private readonly terms = new Map<string, Term>();
  /** Every session opened for a campaign or a term, ended by close(). */
  private readonly open = new Set<DedicatedSession>();
  private readonly ensureTable: (key: string, run: (text: string) => Promise<unknown>) => Promise<void>;
  private closed = false;

  constructor(private readonly server: AdvisoryServer) {
    this.sql = advisoryElectionSql(server.names);
    this.ensureTable = schemaOnce((_key: string, run: (text: string) => Promise<unknown>) => run(this.sql.schema));
  }

  /** Waits to lead `request.key`: its advisory lock on a session of its own. */
  async campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    if (this.closed || this.server.closed) throw closedError('elect', request.key, this.server.name);
    const { options, deadlineMs } = this.server;
    const id = advisoryLockId(request.key, options.namespace).toString();
    let term: Term | undefined;
    const session: DedicatedSession = new DedicatedSession(clientConfig(options), (cause) => {
      this.open.delete(session);
      if (term === undefined || !this.terms.delete(term.grant.token)) return;
      request.onLost(term.grant, new Error(`the session leading "${request.key}" ended: ${cause.message}`));
    });
    const client = session.client;
    this.open.add(session);
    // A cancel is the session's end: the server drops the queued request with it.
    const detach = onAbort(signal, () => void session.end(100));
    try {
      await session.open({ connectMs: options.connectTimeoutMs + 100, prepareMs: deadlineMs }, (prepared) => this.server.prepare(prepared));
      const epoch = session.epoch;
      await this.ensureTable(request.key, (text) => withDeadline(client.query(text), deadlineMs));
      const values = { id, epoch, key: request.key, token: randomToken(), candidate: request.candidate };
      let sentAt = Date.now();
      let counter = await this.take(client, undefined, values, request.ttlMs, deadlineMs);
      if (counter === undefined) {
        request.onContended?.();
        const waitMs = Math.min(maxTimeoutMs, deadline - Date.now());
        if (waitMs <= 0 || signal.aborted) return undefined;
        // The wait ends at a time we do not know, and the reply can take a while to be read on a
        // busy machine: the granted session first gets a statement's deadline of idle time, and
        // the confirming statement, sent at a time we do know (where the term's lease counts from),
        // shortens it to the ttl. Only a client that dies in between makes followers wait longer.
        counter = await this.take(
          client,
          { waitMs, statementTimeoutMs: options.statementTimeoutMs },
          values,
          Math.max(request.ttlMs, deadlineMs),
          waitMs + deadlineMs,
        );
        if (counter === undefined || signal.aborted) return undefined;
        sentAt = Date.now();
        await withDeadline(client.query(this.sql.confirm(request.ttlMs)), deadlineMs);
      }
      const fence = fenceOf(epoch, counter);
      if (fence === undefined || session.ended || signal.aborted) return undefined;
      const grant = {
        key: request.key,
        owner: request.owner,
        token: values.token,
        fence,
        sentAt,
        validUntil: leaseValidUntil(sentAt, request.ttlMs),
      };
      term = { session, id, request, grant };
      this.terms.set(grant.token, term);
      return grant;
    } catch (error) {
      // 55P03 lock_timeout, 57014 statement_timeout, or the abort's end of the session: not granted.
      const code = (error as { code?: unknown } | null)?.code;
      if (signal.aborted || code === '55P03' || code === '57014') return undefined;
      throw this.unavailable('elect', request.key, error);
    } finally {
      detach();
      // No term: the session goes, and with it anything it may hold or wait for.
      if (term === undefined) {
        this.open.delete(session);
        await session.end();
      }
    }
  }

  /** The current leader's id: the recorded one, while its session holds the lock. */
  async leader(key: string): Promise<string | undefined> {
    await this.ensureTable(key, (text) => this.server.query('leader', key, text, []));
    const id = advisoryLockId(key, this.server.options.namespace);
    const { classid, objid } = advisoryLockParts(id);
    const [row] = await this.server.query<{ id: string }>('leader', key, this.sql.leader, [id.toString(), classid, objid]);
    return row?.id;
  }

  /** The current leader's id and term, read as leader() reads it. */
  async leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    await this.ensureTable(key, (text) => this.server.query('leader', key, text, []));
    const id = advisoryLockId(key, this.server.options.namespace);
    const { classid, objid } = advisoryLockParts(id);
    const [row] = await this.server.query<{ id: string; term: string }>('leader', key, this.sql.leaderInfo, [
      id.toString(),
      classid,
      objid,
    ]);
    return row === undefined ? undefined : { id: row.id, term: Number(row.term) };
  }

  /** A term lives while its session does: a ping proves it and moves the local deadline on. */
  async renew(grant: Grant, ttlMs?: number): Promise<boolean> {
    const term = this.terms.get(grant.token);
    if (term === undefined) return false;
    const sentAt = Date.now();
    try {
      await withDeadline(term.session.client.query('SELECT 1'), this.server.deadlineMs);
    } catch {
      void term.session.lose(new Error('the connection closed'));
      return false;
    }
    if (!this.terms.has(grant.token)) return false;
    const ttl = ttlMs ?? term.request.ttlMs;
    term.grant.validUntil = leaseValidUntil(sentAt, ttl);
    return true;
  }

  /** Its session still lives (renew); a session the server ended answers false. */
  validate(grant: Grant): Promise<boolean> {
    return this.renew(grant).catch(falseIfEnded);
  }

  /** Deletes our leaders row and unlocks in one statement, then ends the term's session. */
  async release(grant: Grant): Promise<boolean> {
    const term = this.terms.get(grant.token);
    if (term === undefined) return false;
    this.terms.delete(grant.token);
    try {
      const result = await withDeadline(
        term.session.client.query<{ ok: boolean }>(this.sql.release, [grant.token, term.id]),
        this.server.deadlineMs,
      );
      return result.rows[0]?.ok === true;
    } catch {
      // Ending the session below lets the lock go in any case.
      return false;
    } finally {
      this.open.delete(term.session);
      await term.session.end();
    }
  }

  /** Ends every campaign's and term's session; a term still held is reported lost. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.open].map((session) => session.lose(new Error('the connection closed'))));
  }

  /** One campaign statement: the counter drawn after the grant, or undefined when not granted. */
  private async take(
    client: pg.Client,
    wait: { readonly waitMs: number; readonly statementTimeoutMs: number } | undefined,
    values: Parameters<ReturnType<typeof advisoryElectionSql>['campaign']>[2],
    idleMs: number,
    deadlineMs: number,
  ): Promise<string | undefined> {
    type Row = { counter: string | null; named: number };
    // A waiting campaign is several statements (one result each); a try is one.
    const results = (await withDeadline(client.query(this.sql.campaign(client, wait, values, idleMs)), deadlineMs)) as unknown as
      | pg.QueryResult<Row>
      | pg.QueryResult<Row>[];
    const row = (Array.isArray(results) ? results.at(-1) : results)?.rows[0];
    if (row?.counter === null || row?.counter === undefined) return undefined;
    if (row.named !== 1) throw new Error('the leaders row was not written');
    return row.counter;
  }

  private unavailable(action: string, key: string, cause: unknown): BackendUnavailableError {
    return new BackendUnavailableError(action, { key, backend: this.server.name, cause });
  }
}
