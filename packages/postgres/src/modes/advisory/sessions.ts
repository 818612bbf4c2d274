import type pg from 'pg';
import { DeadlineExceededError, withDeadline } from '@deadbolt/core/adapter';
import { clientConfig } from '../../connect.js';
import { DedicatedSession } from '../../dedicated-session.js';
import type { ResolvedPostgresOptions } from '../../settings.js';

/** The pool's refusal once closed (a cause: the server's pick types it for the action and key). */
const closedCause = (): Error => new Error('the backend is closed');

/** The statements a session batches: one id, or an array of ids (rows carry `n`, 1-based). */
export interface BatchStatements {
  readonly try: pg.QueryConfig;
  readonly tryMany: pg.QueryConfig;
  readonly unlock: pg.QueryConfig;
  readonly unlockMany: pg.QueryConfig;
}

interface BatchedCall {
  readonly kind: 'try' | 'unlock';
  readonly id: string;
  resolve(value: string | null | boolean): void;
  reject(error: unknown): void;
}

/**
 * One dedicated PostgreSQL session of the advisory mode. Many locks live on one session (session-level
 * advisory locks are per session, not per statement), so 10 000 held locks need a handful of
 * connections. A session runs one statement at a time (pg queues the rest); one that is parked in the
 * server's lock queue (`blocked`) is given no other work. It dies as a whole: every lock on it is lost.
 */
export class Session {
  /** Lock ids (as text) held on this session; the backend keeps what belongs to them. */
  readonly held = new Set<string>();
  inflight = 0;
  blocked = false;
  /** Told each NOTICE the server sends this session (the advisory wait's "queued"). */
  onNotice: ((message: string | undefined) => void) | undefined;
  private pinging: Promise<boolean> | undefined;
  private tail: Promise<void> = Promise.resolve();
  private readonly queued: BatchedCall[] = [];
  private batching = false;

  private readonly link: DedicatedSession;

  constructor(
    config: pg.ClientConfig,
    private readonly deadlineMs: number,
    private readonly statements: BatchStatements,
    onDeath: (session: Session, cause: Error) => void,
  ) {
    this.link = new DedicatedSession(
      config,
      (cause) => {
        for (const call of this.queued.splice(0)) call.reject(cause);
        onDeath(this, cause);
      },
      'the session ended',
    );
    this.link.client.on('notice', (notice) => this.onNotice?.(notice.message));
  }

  get client(): pg.Client {
    return this.link.client;
  }

  /** Ended (lost, retired or closed): it runs nothing more, and every lock on it is gone. */
  get dead(): boolean {
    return this.link.ended;
  }

  /** The fence epoch of the server incarnation this session is connected to. */
  get epoch(): number {
    return this.link.epoch;
  }

  get pid(): number | undefined {
    return this.link.pid;
  }

  /** Connects and prepares the session (the schema, the epoch) within the deadlines. */
  open(connectMs: number, prepare: (client: pg.Client) => Promise<number>, prepareMs: number): Promise<void> {
    return this.link.open({ connectMs, prepareMs }, prepare);
  }

  /** Ends the session on purpose (nothing it holds is reported lost). */
  end(): Promise<void> {
    return this.link.end();
  }

  /**
   * Runs a statement within the deadline. No answer in time means the server or the link is stuck:
   * the session is ended, since every later statement would queue behind the stuck one.
   */
  async query<R extends pg.QueryResultRow>(
    config: pg.QueryConfig | string,
    values?: unknown[],
    ms = this.deadlineMs,
  ): Promise<pg.QueryResult<R>> {
    if (this.dead) throw new Error('the session ended');
    // One statement at a time, in order, queued here rather than inside pg (whose queue is deprecated).
    // An idle session (the uncontended case) sends at once, without waiting a turn.
    const idle = this.inflight === 0;
    this.inflight += 1;
    const turn = this.tail;
    let done!: () => void;
    this.tail = new Promise<void>((resolve) => (done = resolve));
    try {
      return await withDeadline(
        idle
          ? this.client.query<R>(config as pg.QueryConfig, values)
          : turn.then(() => {
              if (this.dead) throw new Error('the session ended');
              return this.client.query<R>(config as pg.QueryConfig, values);
            }),
        ms,
      );
    } catch (error) {
      if (error instanceof DeadlineExceededError) this.kill(error);
      throw error;
    } finally {
      this.inflight -= 1;
      done();
    }
  }

  /** Work waiting for this session: what a new statement would queue behind. */
  get load(): number {
    return this.inflight + this.queued.length;
  }

  /** pg_try_advisory_lock plus the fence counter (null: busy), batched with concurrent calls. */
  tryLock(id: string): Promise<string | null> {
    return this.batched('try', id) as Promise<string | null>;
  }

  /** pg_advisory_unlock (false: this session did not hold it), batched with concurrent calls. */
  unlock(id: string): Promise<boolean> {
    return this.batched('unlock', id) as Promise<boolean>;
  }

  private batched(kind: BatchedCall['kind'], id: string): Promise<string | null | boolean> {
    if (this.dead) return Promise.reject(new Error('the session ended'));
    return new Promise((resolve, reject) => {
      this.queued.push({ kind, id, resolve, reject });
      if (!this.batching) void this.pump();
    });
  }

  /**
   * Sends every queued call of the first call's kind as ONE statement (unnest of the ids), so a
   * burst costs one round trip and one transaction end per session instead of one per lock: the
   * end of every transaction walks the session's whole local lock table (LockReleaseAll), so a
   * statement per lock on a session holding thousands would cost O(held) each.
   */
  private async pump(): Promise<void> {
    this.batching = true;
    try {
      while (this.queued.length > 0 && !this.dead) {
        const kind = this.queued[0]!.kind;
        const batch = this.queued.filter((call) => call.kind === kind);
        for (let i = this.queued.length - 1; i >= 0; i -= 1) if (this.queued[i]!.kind === kind) this.queued.splice(i, 1);
        try {
          const values = await this.runBatch(kind, batch);
          batch.forEach((call, index) => call.resolve(values[index]!));
        } catch (error) {
          for (const call of batch) call.reject(error);
        }
      }
    } finally {
      this.batching = false;
      if (this.dead) for (const call of this.queued.splice(0)) call.reject(new Error('the session ended'));
    }
  }

  private async runBatch(kind: BatchedCall['kind'], batch: readonly BatchedCall[]): Promise<(string | null | boolean)[]> {
    const field = kind === 'try' ? 'counter' : 'ok';
    if (batch.length === 1) {
      const result = await this.query<Record<string, string | null | boolean>>(this.statements[kind], [batch[0]!.id]);
      return [result.rows[0]?.[field] ?? null];
    }
    const many = kind === 'try' ? this.statements.tryMany : this.statements.unlockMany;
    const result = await this.query<Record<string, string | null | boolean> & { n: string }>(many, [batch.map((call) => call.id)]);
    const values = new Array<string | null | boolean>(batch.length).fill(null);
    for (const row of result.rows) values[Number(row.n) - 1] = row[field] ?? null;
    return values;
  }

  /** One round trip shared by every renewal that asks at the same time: is the session alive? */
  ping(): Promise<boolean> {
    this.pinging ??= this.query('SELECT 1')
      .then(
        () => true,
        (error: unknown) => {
          this.kill(error instanceof Error ? error : new Error(String(error)));
          return false;
        },
      )
      .finally(() => {
        this.pinging = undefined;
      });
    return this.pinging;
  }

  /** Ends the session as lost: queued calls fail and every lock on it is reported lost. */
  kill(cause: Error): void {
    void this.link.lose(cause);
  }
}

/**
 * The advisory mode's sessions: at most `options.pool`, opened on demand. Statements go to the least
 * busy session that is not parked in a lock wait (a new one opens while every open one is busy);
 * a blocking wait takes an idle session that holds nothing, so a parked session never delays the
 * release of another lock, and at least one session always stays free for statements.
 */
export class SessionPool {
  private readonly sessions: Session[] = [];
  private opening = 0;
  private readonly openings = new Set<Promise<Session>>();
  private closed = false;

  constructor(
    private readonly options: ResolvedPostgresOptions,
    private readonly deadlineMs: number,
    private readonly statements: BatchStatements,
    private readonly prepare: (client: pg.Client) => Promise<number>,
    private readonly onDeath: (session: Session, cause: Error) => void,
  ) {}

  get size(): number {
    return this.sessions.length + this.opening;
  }

  /** A session for a short statement. */
  async forStatement(): Promise<Session> {
    let best: Session | undefined;
    for (const session of this.sessions) {
      if (session.blocked || session.dead) continue;
      if (best === undefined || session.load < best.load) best = session;
      if (best.load === 0) return best;
    }
    if (this.size < this.options.pool) return this.open();
    if (best !== undefined) return best;
    // Every session is opening or parked (forWait keeps one free): take the next one to open.
    if (this.openings.size > 0) return Promise.race(this.openings);
    return this.open();
  }

  /** An idle session holding nothing, for a blocking wait; undefined when none may be spared. */
  async forWait(): Promise<Session | undefined> {
    const blocked = this.sessions.filter((session) => session.blocked).length;
    if (blocked + 1 >= this.options.pool) return undefined;
    for (const session of this.sessions) {
      if (!session.blocked && !session.dead && session.load === 0 && session.held.size === 0) return session;
    }
    if (this.size < this.options.pool) return this.open();
    return undefined;
  }

  /** Ends a session that must not run anything else (an abandoned wait); it holds nothing. */
  retire(session: Session): Promise<void> {
    this.remove(session);
    return session.end();
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.sessions.splice(0).map((session) => session.end()));
  }

  private open(): Promise<Session> {
    const opening = this.connect();
    this.openings.add(opening);
    const forget = (): void => {
      this.openings.delete(opening);
    };
    opening.then(forget, forget);
    return opening;
  }

  private async connect(): Promise<Session> {
    if (this.closed) throw closedCause();
    this.opening += 1;
    const session = new Session(clientConfig(this.options), this.deadlineMs, this.statements, (dead, cause) => {
      this.remove(dead);
      this.onDeath(dead, cause);
    });
    try {
      await session.open(this.options.connectTimeoutMs + 100, this.prepare, this.deadlineMs);
    } finally {
      this.opening -= 1;
    }
    if (this.closed || session.dead) {
      void session.end();
      throw closedCause();
    }
    this.sessions.push(session);
    return session;
  }

  private remove(session: Session): void {
    const index = this.sessions.indexOf(session);
    if (index >= 0) this.sessions.splice(index, 1);
  }
}
