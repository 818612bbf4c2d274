import { BackendUnavailableError, DeadboltError, withDeadline, type AcquireRequest, type AttemptResult, type Capabilities, type Grant, type LockBackend } from '@deadbolt/core/adapter';
import pg from 'pg';
import { clientConfig, isAlreadyExists } from '../connect.js';
import { advisoryLockId, advisoryLockParts } from '../key-hash.js';
import type { ResolvedPostgresOptions } from '../options.js';
import { advisorySql } from '../sql.js';
import { randomToken } from '../token.js';

export const advisoryCapabilities: Capabilities = Object.freeze({
  consistency: 'CP',
  fencing: true,
  reentrant: 'client',
  notifications: true,
  lease: 'session',
  clock: 'server',
  minTtlMs: 10,
  maxKeyBytes: 1024,
});

/** A lock held by one checked-out session; nobody else gets that session until we let it go. */
interface Held {
  readonly client: pg.PoolClient;
  readonly id: bigint;
  readonly detach: () => void;
}

const slackMs = 500;

/**
 * 'postgres:advisory': a session-level pg_advisory_lock on a pooled session that stays checked out
 * while the lock is held (the pool never hands a held session to anyone). The lock lives and dies with
 * the session: a dropped connection or pg_terminate_backend reports the grant lost. Waiting uses the
 * server's lock queue (pg_advisory_lock with lock_timeout), cancelled with pg_cancel_backend on abort.
 * Needs session state, so it does NOT work through a transaction-pooling PgBouncer (use 'lease').
 */
export class AdvisoryBackend implements LockBackend {
  readonly name = 'postgres:advisory';
  readonly capabilities = advisoryCapabilities;
  readonly defaultPrefix = '';
  private readonly pool: pg.Pool;
  private readonly sql: ReturnType<typeof advisorySql>;
  private readonly held = new Map<string, Held>();
  private readonly deadlineMs: number;
  private schema: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: ResolvedPostgresOptions) {
    this.sql = advisorySql(options.fenceTable);
    this.deadlineMs = options.connectTimeoutMs + options.statementTimeoutMs + slackMs;
    this.pool = new pg.Pool({ ...clientConfig(options), max: options.pool, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
    this.pool.on('error', () => undefined);
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const client = await this.checkout('acquire', request.key);
    const id = advisoryLockId(request.key, this.options.namespace);
    let locked = false;
    try {
      const result = await withDeadline(client.query<{ ok: boolean; fence: string | null }>(this.sql.tryLockAndBump, [id.toString(), request.key]), this.deadlineMs);
      locked = result.rows[0]?.ok === true;
      if (!locked) {
        client.release();
        return { acquired: false };
      }
      return { acquired: true, grant: this.hold(request, client, id, Number(result.rows[0]?.fence)) };
    } catch (error) {
      // Unknown state (maybe locked): ending the session is the only way to be sure nothing stays held.
      client.release(true);
      throw this.unavailable('acquire', request.key, error);
    }
  }

  /**
   * Waits in the server's queue: BEGIN; SET LOCAL lock_timeout = remaining; pg_advisory_lock; bump the
   * fence; COMMIT. SET LOCAL resets itself at the end of the transaction, so the session goes back clean.
   */
  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    if (signal.aborted) return undefined;
    const client = await this.checkout('acquire', request.key);
    const id = advisoryLockId(request.key, this.options.namespace);
    let cancelled = false;
    const onAbort = (): void => {
      cancelled = true;
      void this.cancel(client);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const waitMs = Math.max(1, deadline - Date.now());
      // Both are integers we computed (no user text): safe to inline, as SET takes no parameters.
      await withDeadline(
        client.query(`BEGIN; SET LOCAL lock_timeout = ${waitMs}; SET LOCAL statement_timeout = ${waitMs + this.options.statementTimeoutMs}`),
        this.deadlineMs,
      );
      if (signal.aborted) throw signal.reason;
      await withDeadline(client.query(this.sql.lock, [id.toString()]), waitMs + this.deadlineMs);
      const fence = await withDeadline(client.query<{ fence: string }>(this.sql.bump, [request.key]), this.deadlineMs);
      await withDeadline(client.query('COMMIT'), this.deadlineMs);
      signal.removeEventListener('abort', onAbort);
      if (cancelled || signal.aborted) {
        // Granted just as the caller gave up: hand it back (ending the session unlocks for sure).
        client.release(true);
        return undefined;
      }
      return this.hold(request, client, id, Number(fence.rows[0]?.fence));
    } catch (error) {
      signal.removeEventListener('abort', onAbort);
      const code = (error as { code?: unknown } | null)?.code;
      // 55P03 lock_not_available (lock_timeout), 57014 query_canceled (our abort): nothing was granted.
      if (code === '55P03' || code === '57014' || cancelled) {
        const clean = await withDeadline(client.query('ROLLBACK'), this.deadlineMs).then(() => true, () => false);
        // A rollback does not undo a session-level lock: only reuse the session if it holds nothing.
        const holdsNothing = clean && (await this.holdsNothing(client));
        client.release(!holdsNothing);
        if (code === '55P03' || cancelled) return undefined;
      } else {
        client.release(true);
      }
      throw this.unavailable('acquire', request.key, error);
    }
  }

  async renew(grant: Grant, _ttlMs?: number): Promise<boolean> {
    const held = this.held.get(grant.token);
    if (held === undefined) return false;
    const { classid, objid } = advisoryLockParts(held.id);
    try {
      const result = await withDeadline(held.client.query<{ held: boolean }>(this.sql.holds, [classid, objid]), this.deadlineMs);
      return result.rows[0]?.held === true;
    } catch {
      // The session is unusable, so the lock is gone with it (or will be once the server notices).
      this.drop(grant.token, true);
      return false;
    }
  }

  async release(grant: Grant): Promise<boolean> {
    const held = this.held.get(grant.token);
    if (held === undefined) return false;
    this.held.delete(grant.token);
    held.detach();
    try {
      const result = await withDeadline(held.client.query<{ ok: boolean }>(this.sql.unlock, [held.id.toString()]), this.deadlineMs);
      const ok = result.rows[0]?.ok === true;
      held.client.release(!ok);
      return ok;
    } catch {
      held.client.release(true);
      return false;
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const token of [...this.held.keys()]) this.drop(token, true);
      await withDeadline(this.pool.end(), 1_000).catch(() => undefined);
    })();
    return this.closing;
  }

  private hold(request: AcquireRequest, client: pg.PoolClient, id: bigint, fence: number): Grant {
    const grant: Grant = { key: request.key, owner: request.owner, token: randomToken(), fence };
    const lost = (cause?: unknown): void => {
      if (!this.held.has(grant.token)) return;
      this.drop(grant.token, true);
      request.onLost(grant, cause instanceof Error ? cause : new Error(`the session holding "${request.key}" ended`));
    };
    const onError = (error: Error): void => lost(error);
    const onEnd = (): void => lost();
    client.on('error', onError);
    client.on('end', onEnd);
    const detach = (): void => {
      client.off('error', onError);
      client.off('end', onEnd);
    };
    this.held.set(grant.token, { client, id, detach });
    return grant;
  }

  private drop(token: string, destroy: boolean): void {
    const held = this.held.get(token);
    if (held === undefined) return;
    this.held.delete(token);
    held.detach();
    held.client.on('error', () => undefined);
    try {
      held.client.release(destroy);
    } catch {
      // already released by the pool after a fatal error
    }
  }

  private async holdsNothing(client: pg.PoolClient): Promise<boolean> {
    const result = await withDeadline(
      client.query<{ n: string }>(`SELECT count(*)::text AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`),
      this.deadlineMs,
    ).catch(() => undefined);
    return result?.rows[0]?.n === '0';
  }

  /** Cancels the waiting statement of `client` from a separate short-lived connection (a pg cancel). */
  private async cancel(client: pg.PoolClient): Promise<void> {
    const pid = (client as unknown as { processID?: number }).processID;
    if (pid === undefined) return;
    const canceller = new pg.Client(clientConfig(this.options));
    canceller.on('error', () => undefined);
    try {
      await withDeadline(canceller.connect(), this.deadlineMs);
      await withDeadline(canceller.query('SELECT pg_cancel_backend($1)', [pid]), this.deadlineMs);
    } catch {
      // The waiting query's own deadline still bounds it.
    } finally {
      await withDeadline(canceller.end(), 500).catch(() => undefined);
    }
  }

  private async checkout(action: string, key: string): Promise<pg.PoolClient> {
    if (this.closing) throw new BackendUnavailableError(action, { key, backend: this.name, cause: new Error('the backend is closed') });
    try {
      await withDeadline(this.ensureSchema(), this.deadlineMs);
      return await withDeadline(this.pool.connect(), this.deadlineMs);
    } catch (error) {
      throw this.unavailable(action, key, error);
    }
  }

  private ensureSchema(): Promise<void> {
    this.schema ??= (async () => {
      for (const statement of this.sql.schema) {
        try {
          await this.pool.query(statement);
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

  private unavailable(action: string, key: string, error: unknown): DeadboltError {
    if (error instanceof DeadboltError) return error;
    return new BackendUnavailableError(action, { key, backend: this.name, cause: error });
  }
}
