import { randomBytes } from 'node:crypto';
import {
  closedError,
  endpointOf,
  guardCall,
  inspectSafely,
  type AcquireRequest,
  type AttemptResult,
  type Grant,
  type LockBackend,
} from '@deadbolt/core/adapter';
import type pg from 'pg';
import { examplePgCapabilities } from './capabilities.js';
import { classifyPgError } from './classify.js';
import { Connections } from './connections.js';
import { backendName, type ResolvedExamplePgOptions } from './options.js';
import type { ExamplePgStatements } from './sql.js';

/**
 * A mutex on one PostgreSQL table: the backend object is the mutex's driver (tryAcquire, renew,
 * renewMany, release, validate). Core does the rest: waiting (it polls with backoff, as there is
 * no waitForChange), re-entry, renewal, events, input checks.
 */
export class ExamplePgBackend implements LockBackend {
  readonly name = backendName;
  readonly capabilities = examplePgCapabilities;
  readonly defaultPrefix = 'deadbolt:';
  readonly endpoint: string;
  readonly callTimeoutMs: number;
  /** Every statement runs under guardCall's deadline: core adds no timer of its own per call. */
  readonly boundsCalls = true;

  readonly #connections: Connections;
  readonly #closed = new AbortController();
  #schema: Promise<unknown> | undefined;

  constructor(
    options: ResolvedExamplePgOptions,
    private readonly sql: ExamplePgStatements,
  ) {
    this.endpoint = endpointOf([options]);
    this.callTimeoutMs = options.timeoutMs;
    const config: pg.ClientConfig = {
      host: options.host,
      port: options.port,
      user: options.user,
      password: options.password,
      database: options.database,
      application_name: 'deadbolt-example',
      connectionTimeoutMillis: options.timeoutMs,
      statement_timeout: options.timeoutMs,
      keepAlive: true,
    };
    this.#connections = new Connections(config, options.connections);
  }

  async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const grant = { key: request.key, owner: request.owner, token: randomBytes(16).toString('base64url') };
    // An attempt we gave up on (deadline, close) may still land when a frozen server wakes: the
    // guard then releases it by its token, retrying within its ttl, so no lease is left unheld.
    const result = await this.#run<{ fence: string }>('acquire', request.key, this.sql.acquire, [request.key, grant.token, request.ttlMs], {
      undo: () => this.release(grant),
      undoWithinMs: request.ttlMs,
    });
    const row = result.rows[0];
    return row === undefined ? { acquired: false } : { acquired: true, grant: { ...grant, fence: Number(row.fence) } };
  }

  async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return (await this.#run('renew', grant.key, this.sql.renew, [grant.key, grant.token, ttlMs])).rowCount === 1;
  }

  /** A tick's renewals in one statement: one round trip however many locks the client holds. */
  async renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    const values = [grants.map((grant) => grant.key), grants.map((grant) => grant.token), ttlMs];
    const result = await this.#run<{ token: string }>(
      'renew',
      grants.length === 1 ? grants[0]!.key : undefined,
      this.sql.renewMany,
      values,
    );
    const renewed = new Set(result.rows.map((row) => row.token));
    return grants.map((grant) => renewed.has(grant.token));
  }

  /** Compare-and-delete by token: another owner's row (a later grant of the key) is never touched. */
  async release(grant: Grant): Promise<boolean> {
    const result = await this.#run<{ live: boolean }>('release', grant.key, this.sql.release, [grant.key, grant.token]);
    return result.rows[0]?.live === true;
  }

  async validate(grant: Grant): Promise<boolean> {
    return (await this.#run('validate', grant.key, this.sql.validate, [grant.key, grant.token])).rowCount === 1;
  }

  async close(): Promise<void> {
    // Statements in flight give up at once (the guard types the reason), and so do pending undos.
    this.#closed.abort(new Error('the backend is closed'));
    await this.#connections.close();
  }

  /** One statement on the least busy connection, bounded and typed by the kit's guardCall. */
  #run<R extends pg.QueryResultRow>(
    action: string,
    key: string | undefined,
    text: string,
    values: readonly unknown[],
    tidy: { undo?: () => Promise<unknown>; undoWithinMs?: number } = {},
  ): Promise<pg.QueryResult<R>> {
    if (this.#closed.signal.aborted) return Promise.reject(closedError(action, key, this.name));
    const connection = this.#connections.pick();
    let sentOn: pg.Client | undefined;
    const statement = async (client: pg.Client) => {
      sentOn = client;
      await this.#ensureSchema(client);
      return client.query<R>(text, [...values]);
    };
    return guardCall(() => connection.use(statement), {
      action,
      key,
      backend: this.name,
      endpoint: this.endpoint,
      timeoutMs: this.callTimeoutMs,
      signal: this.#closed.signal,
      classify: classifyPgError,
      // No answer by the deadline: the link may have gone silent, and pg would keep queueing on it.
      // (Still connecting: the client being opened; else the one it was sent on, not a newer one.)
      onDeadline: () => void connection.drop(sentOn),
      ...tidy,
    });
  }

  /** The table, once per backend, inside the first statement's deadline; a failure is retried by the next call. */
  #ensureSchema(client: pg.Client): Promise<unknown> {
    this.#schema ??= client.query(this.sql.schema).catch((error: unknown) => {
      this.#schema = undefined;
      throw error;
    });
    return this.#schema;
  }
}

// A backend holds its connections' password: console.log and JSON show only this.
inspectSafely(ExamplePgBackend, (backend) => ({ name: backend.name, endpoint: backend.endpoint }));
