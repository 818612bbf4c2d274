import {
  BackendUnavailableError,
  backoffDelayMs,
  type AcquireRequest,
  type AttemptResult,
  type CampaignRequest,
  type Capabilities,
  type DeadboltError,
  type Grant,
  type MultiAttemptResult,
  type TermGrant,
} from '@deadbolt/core/adapter';
import pg from 'pg';
import { isAlreadyExists } from '../connect.js';
import { fenceNames, fenceOf, fenceSchema, readEpoch, type FenceNames } from '../fence.js';
import { advisoryLockId } from '../key-hash.js';
import { falseIfEnded, sessionHoldsLock } from '../validate-sql.js';
import type { ResolvedPostgresOptions } from '../settings.js';
import { Session, SessionPool, type BatchStatements } from '../sessions.js';
import { localTokens } from '../token.js';
import { AdvisoryElection } from './advisory-election.js';
import { AdvisoryMulti } from './advisory-multi.js';
import { isReadWriteGrant } from './advisory-rw.js';
import { AdvisoryKinds } from './advisory-semaphore.js';
import { advisoryWaitSql, queuedNotice } from './advisory-wait.js';
import { baseCapabilities, type ModeContext, type PostgresLockMode } from './mode.js';

export const advisoryCapabilities: Capabilities = Object.freeze({
  ...baseCapabilities,
  lease: 'session',
  // pg_advisory_lock waiters are granted in arrival order by the server's lock manager.
  fair: true,
  // pg_advisory_lock_shared / pg_advisory_lock on dedicated sessions (advisory-rw.ts), and slot
  // locks behind a FIFO gate (advisory-semaphore.ts).
  readWrite: true,
  semaphore: true,
  // acquireAll: the sorted advisory ids in one statement on one session (advisory-multi.ts).
  multi: 'atomic',
  // A term is the key's advisory lock on a session of its own, the fence as term (advisory-election.ts).
  election: true,
});

/** A lock held on one session (or being tried there: `grant` is set once it is ours). */
interface Claim {
  readonly id: string;
  readonly request: AcquireRequest;
  session: Session | undefined;
  grant: Grant | undefined;
}

/** Advisory ids remembered per backend (a few hundred KB at most). */
const maxCachedIds = 10_000;
/** lock_timeout and statement_timeout are int milliseconds. */
const maxTimeoutMs = 2 ** 31 - 1 - 60_000;

/**
 * 'postgres:advisory': session-level pg_advisory_lock, many locks multiplexed onto a few dedicated
 * sessions (SessionPool, at most `pool`), so holding 10 000 locks takes a handful of connections.
 * The lock lives and dies with its session: a dropped connection or pg_terminate_backend reports every
 * lock of that session lost. A free lock costs one round trip (pg_try_advisory_lock and the fence in
 * one statement, no write: see fence.ts); a busy one waits in the server's FIFO lock queue
 * (pg_advisory_lock under lock_timeout) on a session that holds nothing else, cancelled with
 * pg_cancel_backend on abort. Two owners in this client never share a session for one key (a session
 * re-takes its own advisory lock): a key held or being tried here is reported busy without asking.
 * Needs session state, so it does NOT work through a transaction-pooling PgBouncer (use 'lease').
 */
export class AdvisoryMode implements PostgresLockMode {
  /** acquire() makes the first attempt itself: a key found contended before queues without one. */
  readonly acquireQueuesAtOnce = true;
  private readonly name: string;
  private readonly options: ResolvedPostgresOptions;
  private readonly pool: SessionPool;
  private readonly readWrite: AdvisoryKinds;
  private readonly names: FenceNames;
  private readonly claims = new Map<string, Claim>();
  private readonly grants = new Map<string, Claim>();
  private readonly multi: AdvisoryMulti;
  private readonly nextToken = localTokens();
  /** Key -> advisory id (SHA-256 per acquire showed in the profile); bounded, cleared when full. */
  private readonly ids = new Map<string, string>();
  /**
   * Advisory ids whose last attempt here found them busy: the next wait skips the plain attempt and
   * queues at once (advisory-wait.ts). Bounded as `ids`; an id granted without queueing leaves it.
   */
  private readonly contended = new Set<string>();
  private readonly waitSql: ReturnType<typeof advisoryWaitSql>;
  private readonly election: AdvisoryElection;
  private readonly deadlineMs: number;
  private schema: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly context: ModeContext) {
    const options = context.options;
    this.options = options;
    this.name = context.name;
    this.names = fenceNames(options.fenceTable, options.schema);
    this.deadlineMs = context.deadlineMs;
    this.waitSql = advisoryWaitSql(this.names);
    // Named: parsed and planned once per session. nextval runs only for a granted row, after the grant.
    const counter = `CASE WHEN pg_try_advisory_lock(id) THEN nextval('${this.names.sequence}')::text END AS counter`;
    const statements: BatchStatements = {
      try: { name: 'deadbolt_try_lock', text: `SELECT ${counter} FROM (SELECT $1::bigint AS id) AS t` },
      tryMany: { name: 'deadbolt_try_locks', text: `SELECT n, ${counter} FROM unnest($1::bigint[]) WITH ORDINALITY AS t(id, n)` },
      unlock: { name: 'deadbolt_unlock', text: 'SELECT pg_advisory_unlock($1::bigint) AS ok' },
      unlockMany: {
        name: 'deadbolt_unlocks',
        text: 'SELECT n, pg_advisory_unlock(id) AS ok FROM unnest($1::bigint[]) WITH ORDINALITY AS t(id, n)',
      },
    };
    this.readWrite = new AdvisoryKinds(options, this.names, (client) => this.prepareSession(client), this.name);
    this.pool = new SessionPool(
      options,
      this.deadlineMs,
      statements,
      (client) => this.prepareSession(client),
      (session, cause) => this.sessionDied(session, cause),
    );
    this.multi = new AdvisoryMulti({
      name: this.name,
      options,
      pool: this.pool,
      sequence: this.names.sequence,
      isClaimed: (id) => this.claims.has(id),
      claim: (id, request) => this.claims.set(id, { id, request, session: undefined, grant: undefined }),
      unclaim: (id) => {
        if (this.claims.get(id)?.grant === undefined) this.claims.delete(id);
      },
      hold: (id, request, session, counter) => this.hold({ id, request, session, grant: undefined }, session, counter),
      pick: (action, key, pick) => this.session(action, key, pick),
      unavailable: (action, key, error) => this.unavailable(action, key, error),
      cancel: (session) => this.cancel(session),
    });
    this.election = new AdvisoryElection({
      name: this.name,
      options,
      names: this.names,
      deadlineMs: this.deadlineMs,
      prepare: (client) => this.prepareSession(client),
      query: async <R extends pg.QueryResultRow>(action: string, key: string, text: string, values: readonly unknown[]) => {
        const session = await this.session(action, key, () => this.pool.forStatement());
        try {
          return (await session.query<R>(text, [...values])).rows;
        } catch (error) {
          throw this.unavailable(action, key, error);
        }
      },
    });
  }

  /** Waits to lead `request.key`: its advisory lock on a session of its own (advisory-election.ts). */
  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined> {
    if (this.context.closed || this.closing)
      return Promise.reject(this.unavailable('elect', request.key, new Error('the backend is closed')));
    return this.election.campaign(request, deadline, signal);
  }

  leader(key: string): Promise<string | undefined> {
    return this.election.leader(key);
  }

  leaderInfo(key: string): Promise<{ id: string; term: number } | undefined> {
    return this.election.leaderInfo(key);
  }

  /** acquireAll's global order: by advisory id, the order the server takes a set in. */
  orderKeys(fullKeys: readonly string[]): readonly string[] {
    return this.multi.orderKeys(fullKeys);
  }

  tryAcquireMany(requests: readonly AcquireRequest[]): Promise<MultiAttemptResult> {
    return this.multi.tryAcquireMany(requests);
  }

  acquireMany(requests: readonly AcquireRequest[], deadline: number, signal: AbortSignal): Promise<readonly Grant[] | undefined> {
    return this.multi.acquireMany(requests, deadline, signal);
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    if (request.kind?.type === 'permit') {
      const grant = await this.readWrite.acquirePermit(request, request.kind.permits, false, Date.now(), undefined);
      return grant ? { acquired: true, grant } : { acquired: false };
    }
    if (request.kind?.type === 'read' || request.kind?.type === 'write') {
      const grant = await this.readWrite.acquire(
        request,
        request.kind.type,
        request.kind.type === 'read' ? request.kind.downgradeOf : undefined,
        false,
        Date.now(),
        undefined,
      );
      return grant ? { acquired: true, grant } : { acquired: false };
    }
    const id = this.idOf(request.key);
    if (this.claims.has(id)) return { acquired: false };
    const claim: Claim = { id, request, session: undefined, grant: undefined };
    this.claims.set(id, claim);
    let session: Session | undefined;
    try {
      session = await this.session('acquire', request.key, () => this.pool.forStatement());
      claim.session = session;
      const counter = await session.tryLock(id);
      if (counter === null) {
        this.claims.delete(id);
        return { acquired: false };
      }
      return { acquired: true, grant: this.hold(claim, session, counter) };
    } catch (error) {
      this.claims.delete(id);
      // A server-side error may come after the lock was taken: unlock (queued behind it, same session).
      if (session !== undefined && !session.dead) void session.unlock(id).catch(() => undefined);
      throw this.unavailable('acquire', request.key, error);
    }
  }

  /**
   * A plain attempt first (core leaves it to us: acquireQueuesAtOnce), unless this id was found busy
   * last time; then a wait in the server's FIFO queue, in one round trip: SET LOCAL statement_timeout
   * and the wait function (advisory-wait.ts: lock_timeout, pg_advisory_lock, the fence), in one
   * implicit transaction (the local settings end with it; the session-level lock does not). The
   * function's NOTICE as it queues is reported as contention.
   */
  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    if (signal.aborted) return undefined;
    const kind = request.kind?.type;
    const id = kind === undefined ? this.idOf(request.key) : '';
    if (kind !== undefined || !this.contended.has(id)) {
      const attempt = await this.tryAcquire(request);
      if (attempt.acquired) return attempt.grant;
      if (kind === undefined) this.markContended(id);
      request.onContended?.();
      if (signal.aborted || Date.now() >= deadline) return undefined;
    }
    if (request.kind?.type === 'permit') return this.readWrite.acquirePermit(request, request.kind.permits, true, deadline, signal);
    if (request.kind?.type === 'read' || request.kind?.type === 'write') {
      const downgradeOf = request.kind.type === 'read' ? request.kind.downgradeOf : undefined;
      return this.readWrite.acquire(request, request.kind.type, downgradeOf, true, deadline, signal);
    }
    const session = await this.session('acquire', request.key, () => this.pool.forWait());
    if (session === undefined) return this.poll(request, deadline, signal);
    if (signal.aborted) return undefined;
    const waitMs = Math.min(maxTimeoutMs, Math.max(1, deadline - Date.now()));
    const claim: Claim = { id, request, session, grant: undefined };
    let cancelled = false;
    let settled = false;
    let queued = false;
    const onAbort = (): void => {
      cancelled = true;
      // A cancel that lands before the statement starts waiting is lost: repeat until it settles.
      void (async () => {
        while (!settled) {
          await this.cancel(session);
          if (!settled) await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
    };
    session.blocked = true;
    session.onNotice = (message) => {
      if (message !== queuedNotice) return;
      queued = true;
      request.onContended?.();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    try {
      const results = (await session.query(
        this.waitSql.wait(id, waitMs, waitMs + this.options.statementTimeoutMs),
        undefined,
        waitMs + this.deadlineMs,
      )) as unknown as pg.QueryResult<{ counter: string }>[];
      session.blocked = false;
      if (cancelled || signal.aborted) {
        // Granted as the caller gave up; the session may still get our cancel: end it (that unlocks).
        void this.pool.retire(session);
        return undefined;
      }
      if (queued) this.markContended(id);
      else this.contended.delete(id);
      return this.hold(claim, session, results[1]?.rows[0]?.counter ?? '');
    } catch (error) {
      session.blocked = false;
      const code = (error as { code?: unknown } | null)?.code;
      if (cancelled) {
        void this.pool.retire(session);
        return undefined;
      }
      // 55P03 lock_not_available: lock_timeout, nothing was granted and the session is clean.
      if (code === '55P03') return undefined;
      session.kill(error instanceof Error ? error : new Error(String(error)));
      throw this.unavailable('acquire', request.key, error);
    } finally {
      settled = true;
      session.onNotice = undefined;
      signal.removeEventListener('abort', onAbort);
    }
  }

  async renew(grant: Grant, ttlMs?: number): Promise<boolean> {
    return (await this.renewMany([grant], ttlMs === undefined ? undefined : [ttlMs]))[0] ?? false;
  }

  /** A lock is held as long as its session lives: one ping per session, shared by all its locks. */
  async renewMany(grants: readonly Grant[], ttlMs?: readonly number[]): Promise<readonly boolean[]> {
    if (grants.some((grant) => isReadWriteGrant(grant) || this.election.owns(grant))) {
      // Each kind its own way (a mutex ping is shared per session anyway).
      return Promise.all(
        grants.map(async (grant, index) => {
          if (isReadWriteGrant(grant)) return this.readWrite.renew(grant);
          if (this.election.owns(grant)) return this.election.renew(grant, ttlMs?.[index]);
          return (await this.renewMany([grant]))[0] ?? false;
        }),
      );
    }
    const pings = new Map<Session, Promise<boolean>>();
    for (const grant of grants) {
      const session = this.grants.get(grant.token)?.session;
      if (session !== undefined && !pings.has(session)) pings.set(session, session.ping());
    }
    const alive = new Map<Session, boolean>();
    for (const [session, ping] of pings) alive.set(session, await ping);
    return grants.map((grant) => {
      const session = this.grants.get(grant.token)?.session;
      return session !== undefined && alive.get(session) === true && !session.dead;
    });
  }

  /** A lock: its own session still holds it (validate-sql.ts). Read-write, permit and term holds: their session lives (renew). */
  validate(grant: Grant): Promise<boolean> {
    if (isReadWriteGrant(grant) || this.election.owns(grant)) return this.renew(grant).catch(falseIfEnded);
    const claim = this.grants.get(grant.token);
    return sessionHoldsLock(claim?.session, claim?.id ?? '0').catch((error: unknown) =>
      Promise.reject(this.unavailable('validate', grant.key, error)),
    );
  }

  async release(grant: Grant): Promise<boolean> {
    if (isReadWriteGrant(grant)) return this.readWrite.release(grant);
    if (this.election.owns(grant)) return this.election.release(grant);
    const claim = this.grants.get(grant.token);
    if (claim === undefined || claim.session === undefined) return false;
    const session = claim.session;
    this.grants.delete(grant.token);
    try {
      return (await session.unlock(claim.id)) === true;
    } catch {
      // Unknown: the lock may still be held on a live session. Ending the session is the only sure
      // way to let it go, and takes the session's other locks with it (reported lost).
      session.kill(new Error(`the release of "${grant.key}" failed, so its session was ended`));
      return false;
    } finally {
      session.held.delete(claim.id);
      if (this.claims.get(claim.id) === claim) this.claims.delete(claim.id);
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.claims.clear();
      this.grants.clear();
      await Promise.all([this.pool.close(), this.readWrite.close(), this.election.close()]);
    })();
    return this.closing;
  }

  private idOf(key: string): string {
    let id = this.ids.get(key);
    if (id === undefined) {
      if (this.ids.size >= maxCachedIds) this.ids.clear();
      id = advisoryLockId(key, this.options.namespace).toString();
      this.ids.set(key, id);
    }
    return id;
  }

  private markContended(id: string): void {
    if (this.contended.size >= maxCachedIds) this.contended.clear();
    this.contended.add(id);
  }

  private hold(claim: Claim, session: Session, counter: string): Grant {
    const fence = fenceOf(session.epoch, counter);
    if (fence === undefined) {
      void session.unlock(claim.id).catch(() => undefined);
      this.claims.delete(claim.id);
      throw new BackendUnavailableError('acquire', {
        key: claim.request.key,
        backend: this.name,
        cause: new Error('the fence counter of this server incarnation is used up (2^36 grants); a server restart starts a new epoch'),
      });
    }
    const grant: Grant = { key: claim.request.key, owner: claim.request.owner, token: this.nextToken(), fence };
    claim.grant = grant;
    claim.session = session;
    this.claims.set(claim.id, claim);
    this.grants.set(grant.token, claim);
    session.held.add(claim.id);
    return grant;
  }

  /** Every lock of a dead session is lost (the server let them go with it). */
  private sessionDied(session: Session, cause: Error): void {
    for (const id of session.held) {
      const claim = this.claims.get(id);
      if (claim === undefined || claim.session !== session) continue;
      this.claims.delete(id);
      if (claim.grant === undefined) continue;
      this.grants.delete(claim.grant.token);
      claim.request.onLost(claim.grant, new Error(`the session holding "${claim.request.key}" ended: ${cause.message}`));
    }
    session.held.clear();
  }

  /** No session may be parked in a wait (all but one are): try and back off until the deadline. */
  private async poll(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    for (let attempt = 1; !signal.aborted; attempt += 1) {
      const result = await this.tryAcquire(request);
      if (result.acquired) return result.grant;
      const remaining = deadline - Date.now();
      if (remaining <= 0) return undefined;
      await new Promise((resolve) => setTimeout(resolve, Math.min(remaining, backoffDelayMs(attempt))));
    }
    return undefined;
  }

  /** Cancels the wait of `session` from another of our sessions (a pg cancel), which then gets retired. */
  private async cancel(waiting: Session): Promise<void> {
    const pid = waiting.pid;
    if (pid === undefined) return;
    try {
      const session = await this.pool.forStatement();
      await session.query('SELECT pg_cancel_backend($1)', [pid]);
    } catch {
      // The wait's own lock_timeout and deadline still bound it.
    }
  }

  private async prepareSession(client: pg.Client): Promise<number> {
    await this.ensureSchema(client);
    return readEpoch(client, this.names);
  }

  private ensureSchema(client: pg.Client): Promise<void> {
    this.schema ??= (async () => {
      for (const statement of [...fenceSchema(this.names), this.waitSql.schema]) {
        try {
          await client.query(statement);
        } catch (error) {
          if (!isAlreadyExists(error)) throw error;
        }
      }
    })().catch((error: unknown) => {
      this.schema = undefined;
      throw error;
    });
    return this.schema;
  }

  private async session<T>(action: string, key: string, pick: () => Promise<T>): Promise<T> {
    if (this.context.closed || this.closing)
      throw new BackendUnavailableError(action, { key, backend: this.name, cause: new Error('the backend is closed') });
    try {
      return await pick();
    } catch (error) {
      throw this.unavailable(action, key, error);
    }
  }

  private unavailable(action: string, key: string, error: unknown): DeadboltError {
    return this.context.unavailable(action, key, error);
  }
}
