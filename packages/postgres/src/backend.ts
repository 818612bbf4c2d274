import {
  BackendUnavailableError,
  DeadboltError,
  explainConnectionError,
  inspectSafely,
  type AcquireRequest,
  type AttemptResult,
  type CampaignRequest,
  type Capabilities,
  type Grant,
  type LockBackend,
  type MultiAttemptResult,
  type OperationsBackend,
  type TermGrant,
} from '@deadbolt/core/adapter';
import pg from 'pg';
import { clientConfig } from './connect.js';
import { existingListenSession, listenSessionFor } from './listen-session.js';
import { ReleaseListener } from './listener.js';
import type { ModeContext, PostgresLockMode } from './modes/mode.js';
import { runOnceOn } from './run-once.js';
import { modeEntry } from './modes/table.js';
import type { ResolvedPostgresOptions } from './settings.js';
import { releaseChannel } from './sql.js';
import { StatementPool } from './statement-pool.js';

/** Client-side slack over statement_timeout, which should fire first while the server runs. */
const slackMs = 500;

/**
 * The PostgreSQL LockBackend, as packages/redis is organised: one backend owns what every mode shares
 * (the pg.Pool, the LISTEN connection, the closed state, error mapping, close) and delegates the
 * algorithm to the mode picked from the mode table (modes/table.ts). It offers exactly the optional
 * contract methods its mode has (native `acquire`, `waitForChange`, elections, multi-key). No I/O
 * here: connections open on first use.
 */
export class PostgresBackend implements LockBackend {
  readonly name: string;
  readonly capabilities: Capabilities;
  readonly defaultPrefix = '';
  /** The server, for error messages. */
  readonly endpoint: string;
  /** One statement's deadline (connect + statement + slack); core's wait bound is waitMs + this. */
  readonly callTimeoutMs: number;
  readonly acquireQueuesAtOnce?: boolean;
  readonly acquire?: (request: AcquireRequest, deadline: number, signal: AbortSignal) => Promise<Grant | undefined>;
  readonly waitForChange?: (key: string, maxWaitMs: number, signal: AbortSignal) => Promise<void>;
  readonly orderKeys?: (fullKeys: readonly string[]) => readonly string[];
  readonly tryAcquireMany?: (requests: readonly AcquireRequest[]) => Promise<MultiAttemptResult>;
  readonly acquireMany?: (
    requests: readonly AcquireRequest[],
    deadline: number,
    signal: AbortSignal,
  ) => Promise<readonly Grant[] | undefined>;
  readonly campaign?: (request: CampaignRequest, deadline: number, signal: AbortSignal) => Promise<TermGrant | undefined>;
  readonly leader?: (key: string) => Promise<string | undefined>;
  readonly leaderInfo?: (key: string) => Promise<{ readonly id: string; readonly term: number | undefined } | undefined>;
  readonly inspect?: OperationsBackend['inspect'];
  readonly forceRelease?: OperationsBackend['forceRelease'];
  readonly listKeys?: OperationsBackend['listKeys'];
  readonly forcedBy?: OperationsBackend['forcedBy'];
  readonly validate?: (grant: Grant) => Promise<boolean>;
  readonly validateMany?: (grants: readonly Grant[]) => Promise<readonly boolean[]>;

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
    Object.assign(this, runOnceOn(options, this.statements));
    // The LISTEN session, shared by every backend of this process with the same settings (or the
    // same application pool, whose settings it is opened with): listen-session.ts says why.
    const listenConfig: pg.ClientConfig =
      options.ownPool === undefined ? clientConfig(options) : { ...(options.ownPool.options as pg.ClientConfig) };
    const listenTimeoutMs = options.connectTimeoutMs + options.statementTimeoutMs;
    const open = (): pg.Client => {
      const client = new pg.Client({ ...listenConfig, statement_timeout: options.statementTimeoutMs });
      client.on('error', () => undefined);
      return client;
    };
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
    if (mode.acquireQueuesAtOnce) this.acquireQueuesAtOnce = true;
    if (mode.waitForChange) this.waitForChange = mode.waitForChange.bind(mode);
    if (mode.orderKeys) this.orderKeys = mode.orderKeys.bind(mode);
    if (mode.tryAcquireMany) this.tryAcquireMany = mode.tryAcquireMany.bind(mode);
    if (mode.acquireMany) this.acquireMany = mode.acquireMany.bind(mode);
    if (mode.validate) this.validate = mode.validate.bind(mode);
    if (mode.validateMany) this.validateMany = mode.validateMany.bind(mode);
    if (mode.campaign && mode.leader) {
      this.campaign = mode.campaign.bind(mode);
      this.leader = mode.leader.bind(mode);
      if (mode.leaderInfo) this.leaderInfo = mode.leaderInfo.bind(mode);
    }
    // The operator API only where the mode has it: core refuses it, before any I/O, where absent.
    const ops = mode.operations;
    if (ops) {
      this.inspect = (key) => ops.inspect(key);
      this.forceRelease = (key, by) => ops.forceRelease(key, by);
      this.listKeys = (prefix) => ops.listKeys(prefix);
      if (ops.forcedBy) this.forcedBy = (grant) => ops.forcedBy!(grant);
    }
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
      explainConnectionError(error, { action, key, backend: this.name, endpoint: this.endpoint }) ??
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
