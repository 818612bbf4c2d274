import { createHash } from 'node:crypto';
import { BackendUnavailableError, closedError, DeadboltError, guardCall, withDeadline } from '@deadbolt/core/adapter';
import pg from 'pg';
import { CheckedOutConnection } from './checked-out.js';
import { clientConfig, Gate, isAlreadyExists } from './connect.js';
import { classifyConnectionError } from './connection-errors.js';
import { quoteLiteral } from './ddl.js';
import type { ResolvedPostgresOptions } from './settings.js';

/**
 * The pg.Pool a mode runs single statements on (ours, or the application's own, which Deadbolt
 * never ends), behind a Gate (pg-pool never queues) and the adapter kit's call guard (deadline,
 * typed errors, undo of a late effect). The tables a mode needs are created once, lazily, before
 * its first statement. The pool itself opens connections only on first use.
 */
export class StatementPool {
  private poolInstance: pg.Pool | undefined;
  private readonly gate: Gate;
  private readonly schemas: (readonly string[])[] = [];
  /** Functions (`name(args)`) whose existence means the schema is in place: one probe, no DDL. */
  private readonly probes: string[] = [];
  private schema: Promise<void> | undefined;
  private closing = false;
  /** Aborted by close(): stops the kit's retried undo of an attempt given up on. */
  private readonly closed = new AbortController();
  /**
   * Named statements: each is parsed and planned once per connection instead of on every call
   * (~15% of a lease call's round trip on this machine, a contended hand-off being two
   * calls). Off for good once the server says a name is unknown or taken (26000 / 42P05: a
   * transaction-pooling PgBouncer without prepared-statement support moves us between server
   * connections); both errors come at Parse or Bind, before anything ran, so the call is resent
   * unnamed.
   */
  private named = true;
  /** Whether a connection of our own pool has ever been made (see `pool`). */
  private connectedOnce = false;

  constructor(
    private readonly options: ResolvedPostgresOptions,
    private readonly name: string,
    private readonly deadlineMs: number,
  ) {
    // Queue time is bounded separately from the statement deadline (see Gate).
    this.gate = new Gate(options.pool, 30_000);
  }

  /**
   * The pool, created on first use: a mode that never runs a pooled statement opens nothing. Until
   * it has connected once, a connect may take connectTimeoutMs + statementTimeoutMs: a backend's
   * first call has no connection to reuse, so its connect (TCP, startup, SCRAM, a server process
   * forked) is the bulk of that call, which the call guard bounds by the same sum anyway. On a
   * loaded host that connect alone took over 2 s. Once connected, connectTimeoutMs as configured.
   */
  get pool(): pg.Pool {
    if (this.poolInstance === undefined) {
      const options = this.options;
      this.poolInstance =
        options.ownPool ??
        new pg.Pool({
          ...clientConfig(options),
          connectionTimeoutMillis: options.connectTimeoutMs + options.statementTimeoutMs,
          max: options.pool,
          idleTimeoutMillis: 10_000,
          allowExitOnIdle: true,
        });
      // An idle pooled connection that dies emits 'error' on the pool; the next query reconnects.
      if (options.ownPool === undefined) this.poolInstance.on('error', () => undefined);
    }
    return this.poolInstance;
  }

  /**
   * Statements (CREATE ... IF NOT EXISTS) to run once before the first guarded statement, and the
   * function whose existence proves they ran (they run in one transaction, so its last function).
   */
  requireSchema(statements: readonly string[], probe?: string): void {
    this.schemas.push(statements);
    if (probe !== undefined) this.probes.push(probe);
  }

  /**
   * One statement (or a few on one pooled connection) under the gate and the call guard; a
   * connection that gives no answer by the deadline is dropped (checked-out.ts).
   */
  run<T>(
    action: string,
    key: string | undefined,
    operation: (client: pg.PoolClient) => Promise<T>,
    undo?: () => Promise<unknown>,
    undoWithinMs?: number,
  ): Promise<T> {
    if (this.closing) return Promise.reject(closedError(action, key, this.name));
    const guarded = (): Promise<T> => {
      const connection = new CheckedOutConnection();
      const onConnection = (client: pg.PoolClient): Promise<T> => {
        this.markConnected();
        return this.ensureSchema(client).then(() => operation(client));
      };
      return guardCall(() => connection.run(this.pool, onConnection), {
        action,
        key,
        backend: this.name,
        endpoint: this.options.endpoint,
        classify: classifyConnectionError,
        timeoutMs: this.deadlineMs,
        onDeadline: () => connection.drop(),
        undo: undo && (() => undo()),
        // Retried until the server answers (a pool: the undo may reach it before the attempt, and
        // "nothing found" is confirmed once more), within the attempt's ttl, until close().
        undoWithinMs,
        closed: this.closed.signal,
      });
    };
    return this.gate.run(guarded).catch((error: unknown) => {
      // The gate's own queue deadline, untyped: the guard types everything else.
      throw error instanceof DeadboltError ? error : new BackendUnavailableError(action, { key, backend: this.name, cause: error });
    });
  }

  /** A connection was made: from now on our pool's connects get connectTimeoutMs alone (see `pool`). */
  private markConnected(): void {
    if (this.connectedOnce) return;
    this.connectedOnce = true;
    // pg-pool reads its options at each new connection, and hands them to each new client.
    if (this.options.ownPool === undefined && this.poolInstance !== undefined) {
      this.poolInstance.options.connectionTimeoutMillis = this.options.connectTimeoutMs;
    }
  }

  /** Shorthand: one parameterised query. */
  query<R extends pg.QueryResultRow>(
    action: string,
    key: string | undefined,
    text: string,
    params: readonly unknown[],
    undo?: () => Promise<unknown>,
    undoWithinMs?: number,
  ) {
    return this.run(action, key, (client) => this.send<R>(client, text, params), undo, undoWithinMs);
  }

  /** One statement of fixed text on `target`, as a named statement while the server takes them. */
  async send<R extends pg.QueryResultRow>(
    target: pg.Pool | pg.PoolClient,
    text: string,
    params: readonly unknown[],
  ): Promise<pg.QueryResult<R>> {
    const values = [...params];
    if (!this.named) return target.query<R>(text, values);
    try {
      return await target.query<R>({ name: statementName(text), text, values });
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (code !== '26000' && code !== '42P05') throw error;
      this.named = false;
      return target.query<R>(text, values);
    }
  }

  /** Ends our own pool (never the application's). */
  async close(): Promise<void> {
    this.closing = true;
    this.closed.abort(new Error('the backend is closed'));
    if (this.poolInstance !== undefined && this.options.ownPool === undefined) {
      await withDeadline(this.poolInstance.end(), 1_000).catch(() => undefined);
    }
  }

  /**
   * Creates the tables once per backend; a failed attempt is retried by the next call. The first
   * call of a backend pays for this inside its own deadline and lease (core counts the lease from
   * the call), so it is one round trip when the schema exists (a probe) and one more when it does
   * not (every statement in one DO block, serialised by a transaction lock), not one per statement.
   * It runs on the first call's own connection, so a silent one is dropped at that call's deadline.
   */
  private ensureSchema(client: pg.PoolClient): Promise<void> {
    this.schema ??= (async () => {
      if (this.probes.length > 0) {
        const probe = this.probes.map((name) => `to_regprocedure(${quoteLiteral(name)}) IS NOT NULL`).join(' AND ');
        const result = await client.query<{ ready: boolean }>(`SELECT ${probe} AS ready`);
        if (result.rows[0]?.ready === true) return;
        const statements = this.schemas.flat();
        const body = statements.map((statement) => `  EXECUTE ${quoteLiteral(statement)};`).join('\n');
        const lockKey = quoteLiteral(`deadbolt schema ${this.probes.join(' ')}`);
        try {
          await client.query(
            `DO $schema$ BEGIN\n  PERFORM pg_advisory_xact_lock(1684366436, hashtext(${lockKey}));\n${body}\nEND $schema$`,
          );
        } catch (error) {
          if (!isAlreadyExists(error)) throw error;
        }
        return;
      }
      for (const statement of this.schemas.flat()) {
        try {
          await client.query(statement);
        } catch (error) {
          if (!isAlreadyExists(error)) throw error; // two backends racing on IF NOT EXISTS
        }
      }
    })().catch((error: unknown) => {
      this.schema = undefined;
      throw error;
    });
    return this.schema;
  }
}

const names = new Map<string, string>();

/** A statement's name, from its text: two texts never share one (pg refuses a name reused with other text). */
function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `deadbolt_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    if (names.size < 1_000) names.set(text, name);
  }
  return name;
}
