import { closedError, type DeadboltError } from '@deadbolt/core/adapter';
import type pg from 'pg';
import { isAlreadyExists } from '../../connect.js';
import { fenceNames, fenceSchema, readEpoch, type FenceNames } from '../../fence.js';
import { advisoryLockId } from '../../key-hash.js';
import type { ResolvedPostgresOptions } from '../../settings.js';
import type { ModeContext } from '../mode.js';
import { Session, SessionPool, type BatchStatements } from './sessions.js';
import { advisoryWaitSql } from './wait.js';

/** Advisory ids remembered per backend (a few hundred KB at most). */
export const maxCachedIds = 10_000;
/** lock_timeout and statement_timeout are int milliseconds. */
export const maxTimeoutMs = 2 ** 31 - 1 - 60_000;

/**
 * What every advisory driver shares: the server's fence objects and wait function (created once,
 * on the first session), the mutex's multiplexed sessions, the advisory ids, the closed state and
 * the mapping of failures to typed errors. The drivers (mutex, kinds, multi, election) each keep
 * their own holds and reach the server only through this.
 */
export class AdvisoryServer {
  /** 'postgres:advisory', for errors. */
  readonly name: string;
  readonly options: ResolvedPostgresOptions;
  readonly names: FenceNames;
  /** One statement's deadline (connect + statement + slack). */
  readonly deadlineMs: number;
  readonly waitSql: ReturnType<typeof advisoryWaitSql>;
  /** The mutex's sessions; a multi-key set and the election's reads run on them too. */
  readonly sessions: SessionPool;
  private readonly ids = new Map<string, string>();
  private readonly deathWatchers: ((session: Session, cause: Error) => void)[] = [];
  private schema: Promise<void> | undefined;
  private closedHere = false;

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
    this.sessions = new SessionPool(
      options,
      this.deadlineMs,
      statements,
      (client) => this.prepare(client),
      (session, cause) => {
        for (const watch of this.deathWatchers) watch(session, cause);
      },
    );
  }

  /** Set once the backend or this mode began closing: new work is refused. */
  get closed(): boolean {
    return this.context.closed || this.closedHere;
  }

  /** Told when one of the shared sessions dies (every lock on it is lost). */
  onSessionDeath(watch: (session: Session, cause: Error) => void): void {
    this.deathWatchers.push(watch);
  }

  /** Key -> advisory id (SHA-256 per acquire showed in the profile); bounded, cleared when full. */
  idOf(key: string): string {
    let id = this.ids.get(key);
    if (id === undefined) {
      if (this.ids.size >= maxCachedIds) this.ids.clear();
      id = advisoryLockId(key, this.options.namespace).toString();
      this.ids.set(key, id);
    }
    return id;
  }

  /** Readies a new session: the fence objects and wait function (once), then the epoch (one query). */
  async prepare(client: pg.Client): Promise<number> {
    await this.ensureSchema(client);
    return readEpoch(client, this.names);
  }

  /** A shared session picked by `pick`, refused once closed; failures come back typed. */
  async pick<T>(action: string, key: string, pick: () => Promise<T>): Promise<T> {
    if (this.closed) throw closedError(action, key, this.name);
    try {
      return await pick();
    } catch (error) {
      throw this.unavailable(action, key, error);
    }
  }

  /** A short statement on one of the shared sessions. */
  async query<R extends pg.QueryResultRow>(action: string, key: string, text: string, values: readonly unknown[]): Promise<readonly R[]> {
    const session = await this.pick(action, key, () => this.sessions.forStatement());
    try {
      return (await session.query<R>(text, [...values])).rows;
    } catch (error) {
      throw this.unavailable(action, key, error);
    }
  }

  /**
   * Cancels the wait of `waiting` from another of our sessions (a pg cancel), again and again until
   * `settled()`: a cancel that lands before the statement starts waiting is lost.
   */
  cancelUntilSettled(waiting: Session, settled: () => boolean): void {
    void (async () => {
      while (!settled()) {
        await this.cancel(waiting);
        if (!settled()) await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
  }

  unavailable(action: string, key: string | undefined, error: unknown): DeadboltError {
    return this.context.unavailable(action, key, error);
  }

  close(): Promise<void> {
    this.closedHere = true;
    return this.sessions.close();
  }

  private async cancel(waiting: Session): Promise<void> {
    const pid = waiting.pid;
    if (pid === undefined) return;
    try {
      const session = await this.sessions.forStatement();
      await session.query('SELECT pg_cancel_backend($1)', [pid]);
    } catch {
      // The wait's own lock_timeout and deadline still bound it.
    }
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
}
