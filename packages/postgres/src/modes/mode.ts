import type { BackendDrivers, Capabilities, DeadboltError, Grant, HoldDriver } from '@deadbolt/core/adapter';
import type { ReleaseListener } from '../listener.js';
import type { ResolvedPostgresOptions } from '../settings.js';
import type { StatementPool } from '../statement-pool.js';

/**
 * One lock algorithm on PostgreSQL, as packages/redis organises its modes (modes/mode.ts there).
 * PostgresBackend owns what every mode shares (the connection pool, the LISTEN connection, the
 * closed state, error mapping, close) and hands it to the mode as a ModeContext; a mode only speaks
 * SQL, one atomic statement per check-and-act. A mode is the mutex's driver (contract v2), with the
 * optional drivers beside it (kinds, multi, election, operations), each the keeper of the holds it
 * issues; the backend offers exactly those its mode has.
 */
export interface PostgresLockMode extends HoldDriver, Omit<BackendDrivers, 'runs'> {
  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]>;
  /** Frees what the mode opened itself (advisory sessions); the backend closes the shared parts after it. */
  close(): Promise<void>;
  /** Test support: stop as a killed process would (no leave, no release); the backend drops the sockets. */
  crash?(): void;
}

/** What the backend shares with its mode. The pool and the listener open on first use (no I/O before). */
export interface ModeContext {
  readonly options: ResolvedPostgresOptions;
  /** 'postgres:<mode>', for errors. */
  readonly name: string;
  readonly endpoint: string;
  /** One statement's deadline (connect + statement + slack). */
  readonly deadlineMs: number;
  /** The pg.Pool (ours or the application's) behind a gate and the call guard. */
  readonly statements: StatementPool;
  /** The one LISTEN connection of this backend. */
  readonly listener: ReleaseListener;
  /** Set once close() began: a mode refuses new work with the error below. */
  readonly closed: boolean;
  /** A failure as a typed error naming the action, key, backend and (for connection errors) endpoint. */
  unavailable(action: string, key: string | undefined, error: unknown): DeadboltError;
}

/** What a mode table entry builds. */
export type ModeConstructor = (context: ModeContext) => PostgresLockMode;

/** Capabilities every PostgreSQL mode shares: one server judges every grant by its own clock. */
export const baseCapabilities = {
  consistency: 'CP',
  fencing: true,
  reentrant: 'client',
  notifications: true,
  clock: 'server',
  minTtlMs: 10,
  maxKeyBytes: 1024,
} as const satisfies Partial<Capabilities>;
