import {
  BackendUnavailableError,
  backoffDelayMs,
  onAbort,
  type AcquireRequest,
  type AttemptResult,
  type Grant,
  type HoldDriver,
} from '@deadbolt/core/adapter';
import type pg from 'pg';
import { fenceOf } from '../../fence.js';
import { localTokens } from '../../token.js';
import { maxCachedIds, maxTimeoutMs, type AdvisoryServer } from './server.js';
import type { Session } from './sessions.js';
import { sessionHoldsLock } from './validate.js';
import { queuedNotice } from './wait.js';

/** A lock held on one session (or being tried there: `grant` is set once it is ours). */
interface Claim {
  readonly id: string;
  readonly request: AcquireRequest;
  session: Session | undefined;
  grant: Grant | undefined;
}

/**
 * The advisory mutex: session-level pg_advisory_lock, many locks multiplexed onto the shared
 * sessions, so holding 10 000 locks takes a handful of connections. A free lock costs one round
 * trip (pg_try_advisory_lock and the fence in one statement, no write: see fence.ts); a busy one
 * waits in the server's FIFO lock queue (the wait function, wait.ts) on a session that holds nothing
 * else, cancelled with pg_cancel_backend on abort. Two owners in this client never share a session
 * for one key (a session re-takes its own advisory lock): a key held or being tried here is reported
 * busy without asking. It also keeps the grants of a multi-key set (multi.ts): they are plain locks.
 */
export class AdvisoryMutex implements HoldDriver {
  private readonly claims = new Map<string, Claim>();
  private readonly grants = new Map<string, Claim>();
  private readonly nextToken = localTokens();
  /**
   * Advisory ids whose last attempt here found them busy: the next wait skips the plain attempt and
   * queues at once (wait.ts). Bounded as the ids; an id granted without queueing leaves it.
   */
  private readonly contended = new Set<string>();

  constructor(private readonly server: AdvisoryServer) {
    server.onSessionDeath((session, cause) => this.sessionDied(session, cause));
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const id = this.server.idOf(request.key);
    if (this.claims.has(id)) return { acquired: false };
    const claim: Claim = { id, request, session: undefined, grant: undefined };
    this.claims.set(id, claim);
    let session: Session | undefined;
    try {
      session = await this.server.pick('acquire', request.key, () => this.server.sessions.forStatement());
      claim.session = session;
      const counter = await session.tryLock(id);
      if (counter === null) {
        this.claims.delete(id);
        return { acquired: false };
      }
      return { acquired: true, grant: this.hold(id, request, session, counter) };
    } catch (error) {
      this.claims.delete(id);
      // A server-side error may come after the lock was taken: unlock (queued behind it, same session).
      if (session !== undefined && !session.dead) void session.unlock(id).catch(() => undefined);
      throw this.server.unavailable('acquire', request.key, error);
    }
  }

  /**
   * A plain attempt first, unless this id was found busy last time; then a wait in the server's
   * FIFO queue, in one round trip: SET LOCAL statement_timeout and the wait function (wait.ts:
   * lock_timeout, pg_advisory_lock, the fence), in one implicit transaction (the local settings end
   * with it; the session-level lock does not). The function's NOTICE as it queues is reported as
   * contention.
   */
  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    if (signal.aborted) return undefined;
    const { server } = this;
    const id = server.idOf(request.key);
    if (!this.contended.has(id)) {
      const attempt = await this.tryAcquire(request);
      if (attempt.acquired) return attempt.grant;
      this.markContended(id);
      request.onContended?.();
      if (signal.aborted || Date.now() >= deadline) return undefined;
    }
    const session = await server.pick('acquire', request.key, () => server.sessions.forWait());
    if (session === undefined) return this.poll(request, deadline, signal);
    if (signal.aborted) return undefined;
    const waitMs = Math.min(maxTimeoutMs, Math.max(1, deadline - Date.now()));
    let cancelled = false;
    let settled = false;
    let queued = false;
    const cancel = (): void => {
      cancelled = true;
      server.cancelUntilSettled(session, () => settled);
    };
    session.blocked = true;
    session.onNotice = (message) => {
      if (message !== queuedNotice) return;
      queued = true;
      request.onContended?.();
    };
    const detach = onAbort(signal, cancel);
    if (signal.aborted) cancel();
    try {
      const results = (await session.query(
        server.waitSql.wait(id, waitMs, waitMs + server.options.statementTimeoutMs),
        undefined,
        waitMs + server.deadlineMs,
      )) as unknown as pg.QueryResult<{ counter: string }>[];
      session.blocked = false;
      if (cancelled || signal.aborted) {
        // Granted as the caller gave up; the session may still get our cancel: end it (that unlocks).
        void server.sessions.retire(session);
        return undefined;
      }
      if (queued) this.markContended(id);
      else this.contended.delete(id);
      return this.hold(id, request, session, results[1]?.rows[0]?.counter ?? '');
    } catch (error) {
      session.blocked = false;
      const code = (error as { code?: unknown } | null)?.code;
      if (cancelled) {
        void server.sessions.retire(session);
        return undefined;
      }
      // 55P03 lock_not_available: lock_timeout, nothing was granted and the session is clean.
      if (code === '55P03') return undefined;
      session.kill(error instanceof Error ? error : new Error(String(error)));
      throw server.unavailable('acquire', request.key, error);
    } finally {
      settled = true;
      session.onNotice = undefined;
      detach();
    }
  }

  async renew(grant: Grant): Promise<boolean> {
    return (await this.renewMany([grant]))[0] ?? false;
  }

  /** A lock is held as long as its session lives: one ping per session, shared by all its locks. */
  async renewMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
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

  /** Its own session still holds it (validate.ts). */
  validate(grant: Grant): Promise<boolean> {
    const claim = this.grants.get(grant.token);
    return sessionHoldsLock(claim?.session, claim?.id ?? '0').catch((error: unknown) =>
      Promise.reject(this.server.unavailable('validate', grant.key, error)),
    );
  }

  async release(grant: Grant): Promise<boolean> {
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

  // ---- for a multi-key set (multi.ts), whose grants this mutex keeps ------------------------------

  /** True when a key's id is held or being tried by this client (a session re-takes its own lock). */
  isClaimed(id: string): boolean {
    return this.claims.has(id);
  }

  claim(id: string, request: AcquireRequest): void {
    this.claims.set(id, { id, request, session: undefined, grant: undefined });
  }

  unclaim(id: string): void {
    if (this.claims.get(id)?.grant === undefined) this.claims.delete(id);
  }

  /** Records a granted lock on `session`, with the fence counter drawn after its grant. */
  hold(id: string, request: AcquireRequest, session: Session, counter: string): Grant {
    const fence = fenceOf(session.epoch, counter);
    if (fence === undefined) {
      void session.unlock(id).catch(() => undefined);
      this.claims.delete(id);
      throw new BackendUnavailableError('acquire', {
        key: request.key,
        backend: this.server.name,
        cause: new Error('the fence counter of this server incarnation is used up (2^36 grants); a server restart starts a new epoch'),
      });
    }
    const grant: Grant = { key: request.key, owner: request.owner, token: this.nextToken(), fence };
    const claim: Claim = { id, request, session, grant };
    this.claims.set(id, claim);
    this.grants.set(grant.token, claim);
    session.held.add(id);
    return grant;
  }

  /** Forgets every claim (the mode is closing; its sessions end with it). */
  clear(): void {
    this.claims.clear();
    this.grants.clear();
  }

  private markContended(id: string): void {
    if (this.contended.size >= maxCachedIds) this.contended.clear();
    this.contended.add(id);
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
}
