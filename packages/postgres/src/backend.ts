import {
  BackendUnavailableError,
  DeadboltError,
  explainConnectionError,
  inspectSafely,
  type AcquireRequest,
  type AttemptResult,
  type Capabilities,
  type ElectionDriver,
  type Grant,
  type KindsDriver,
  type LockBackend,
  type MultiDriver,
  type OperationsDriver,
  type RunsDriver,
} from '@deadbolt/core/adapter';
import type pg from 'pg';
import { clientConfig } from './connect.js';
import { classifyConnectionError } from './connection-errors.js';
import { DedicatedSession } from './dedicated-session.js';
import { existingListenSession, listenSessionFor } from './listen-session.js';
import { ReleaseListener } from './listener.js';
import type { ModeContext, PostgresLockMode } from './modes/mode.js';
import { runOnceOn } from './run-once.js';
import { modeEntry } from './modes/table.js';
import type { ResolvedPostgresOptions } from './settings.js';
import { releaseChannel } from './modes/lease/sql.js';
import { StatementPool } from './statement-pool.js';

/** Client-side slack over statement_timeout, which should fire first while the server runs. */
const slackMs = 500;

/**
 * The PostgreSQL LockBackend, as packages/redis is organised: one backend owns what every mode shares
 * (the pg.Pool, the LISTEN connection, the closed state, error mapping, close) and delegates the
 * algorithm to the mode picked from the mode table (modes/table.ts). It is the mode's mutex driver
 * and offers exactly the drivers its mode has (kinds, multi, election, operations; runs in every
 * mode). No I/O here: connections open on first use.
 */
export class PostgresBackend implements LockBackend {
  readonly name: string;
  readonly capabilities: Capabilities;
  readonly defaultPrefix = '';
  /** The server, for error messages. */
  readonly endpoint: string;
  /** One statement's deadline (connect + statement + slack); core's wait bound is waitMs + this. */
  readonly callTimeoutMs: number;
  readonly acquire?: (request: AcquireRequest, deadline: number, signal: AbortSignal) => Promise<Grant | undefined>;
  readonly waitForChange?: (key: string, maxWaitMs: number, signal: AbortSignal) => Promise<void>;
  readonly validate?: (grant: Grant) => Promise<boolean>;
  readonly validateMany?: (grants: readonly Grant[]) => Promise<readonly boolean[]>;
  readonly kinds?: KindsDriver;
  readonly multi?: MultiDriver;
  readonly election?: ElectionDriver;
  readonly operations?: OperationsDriver;
  readonly runs: RunsDriver;

  private readonly mode: PostgresLockMode;
  private readonly statements: StatementPool;
  private readonly listener: ReleaseListener;
  private closing: Promise<void> | undefined;

  constructor(options: ResolvedPostgresOptions) {
    const entry = modeEntry(options.mode);
    this.name = `postgres:${options.mode}`;
    this.capabilities = entry.capabilities;
    this.endpoint = options.endpoint;
    this.callTimeoutMs = options.connectTimeoutMs + options.statementTimeoutMs + slackMs;
    this.statements = new StatementPool(options, this.name, this.callTimeoutMs);
    this.runs = runOnceOn(options, this.statements);
    // The LISTEN session, shared by every backend of this process with the same settings (or the
    // same application pool, whose settings it is opened with): listen-session.ts says why.
    const listenConfig: pg.ClientConfig =
      options.ownPool === undefined ? clientConfig(options) : { ...(options.ownPool.options as pg.ClientConfig) };
    const listenTimeoutMs = options.connectTimeoutMs + options.statementTimeoutMs;
    const open = (onLost: () => void): DedicatedSession =>
      new DedicatedSession({ ...listenConfig, statement_timeout: options.statementTimeoutMs }, onLost);
    const share = options.ownPool ?? `${JSON.stringify(listenConfig)}\u0000${options.statementTimeoutMs}\u0000${listenTimeoutMs}`;
    this.listener = new ReleaseListener(
      () => listenSessionFor(share, open, listenTimeoutMs),
      releaseChannel,
      () => existingListenSession(share),
    );
    const backend = this;
    const context: ModeContext = {
      options,
      name: this.name,
      endpoint: this.endpoint,
      deadlineMs: this.callTimeoutMs,
      statements: this.statements,
      listener: this.listener,
      get closed() {
        return backend.closing !== undefined;
      },
      unavailable: (action, key, error) => this.unavailable(action, key, error),
    };
    const mode = entry.create(context);
    this.mode = mode;
    // Only what the mode has: core picks its paths by the presence of these methods.
    if (mode.acquire) this.acquire = mode.acquire.bind(mode);
    if (mode.waitForChange) this.waitForChange = mode.waitForChange.bind(mode);
    if (mode.validate) this.validate = mode.validate.bind(mode);
    if (mode.validateMany) this.validateMany = mode.validateMany.bind(mode);
    // The drivers only where the mode has them: core refuses a primitive, before any I/O, where absent.
    if (mode.kinds) this.kinds = mode.kinds;
    if (mode.multi) this.multi = mode.multi;
    if (mode.election) this.election = mode.election;
    if (mode.operations) this.operations = mode.operations;
  }

  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    return this.mode.tryAcquire(request);
  }

  renew(grant: Grant, ttlMs: number): Promise<boolean> {
    return this.mode.renew(grant, ttlMs);
  }

  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    return this.mode.renewMany(grants, ttlMs);
  }

  release(grant: Grant): Promise<boolean> {
    return this.mode.release(grant);
  }

  /** The mode's own sessions first, then the shared pool (never the application's) and the listener. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.mode.close();
      await Promise.all([this.listener.close(), this.statements.close()]);
    })();
    return this.closing;
  }

  /**
   * Test support (the conformance suite's kill hook): ends like a killed process. Queued waiters
   * stop without leaving, the LISTEN socket is dropped, the pool ends without releasing anything:
   * rows and queue entries stay until their server-clock deadlines.
   */
  async simulateCrash(): Promise<void> {
    this.mode.crash?.();
    this.listener.crash();
    await this.close();
  }

  /** Test support (the fair group's lost-message case): grant messages are dropped from now on. */
  simulateLostGrantMessages(): void {
    this.listener.dropGrants = true;
  }

  private unavailable(action: string, key: string | undefined, error: unknown): DeadboltError {
    if (error instanceof DeadboltError) return error;
    return (
      explainConnectionError(error, { action, key, backend: this.name, endpoint: this.endpoint }, classifyConnectionError) ??
      new BackendUnavailableError(action, { key, backend: this.name, cause: error })
    );
  }
}

/** Picks the mode from the table and builds the backend. No I/O: connections open on first use. */
export function createPostgresBackendFromOptions(options: ResolvedPostgresOptions): LockBackend {
  return new PostgresBackend(options);
}

// The pool keeps the connection string (and its password): print the mode only.
inspectSafely(PostgresBackend, (backend) => ({ name: backend.name }));
