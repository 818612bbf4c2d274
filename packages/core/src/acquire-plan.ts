import type { LockKind } from './backend.js';
import type { HoldDriver } from './contract/drivers.js';
import type { Lock } from './types.js';

/** One acquire's settled parameters: keys, owner, lease and wait, made once before the first attempt. */
export interface AcquirePlan {
  readonly userKey: string;
  readonly fullKey: string;
  readonly owner: string;
  readonly ttlMs: number;
  readonly waitMs: number;
  readonly autoRenew: boolean;
  /** Lock-delay asked for (0: none); checked against the backend's capabilities. */
  readonly lockDelayMs: number;
  /** AcquireOptions.expiringThresholdMs, or the client's default; undefined: a third of the ttl. */
  readonly expiringThresholdMs?: number | undefined;
  readonly signal: AbortSignal | undefined;
  /** Read, write or permit; undefined for the mutex. */
  readonly kind: LockKind | undefined;
  /** The driver that attempts, and then keeps, this hold: the mutex's (the backend), or the kinds driver. */
  readonly driver: HoldDriver;
  /** The owner is a flow minted for this acquire alone: it holds nothing yet, so there is nothing to re-enter. */
  readonly freshOwner?: boolean;
}

/** An attempt that found the lock busy; `retryAfterMs` is the holder's remaining lease, if known. */
export class Busy {
  constructor(readonly retryAfterMs: number | undefined) {}
}

/** Where an acquire's attempts stand: its deadline, start, abort signal and how many attempts so far. */
export interface AttemptContext {
  readonly deadline: number;
  readonly startedAt: number;
  readonly signal: AbortSignal;
  readonly attempts: number;
}

/** How an attempt ended: its outcome, or (outcome undefined) its error. */
export type Settled =
  | { readonly outcome: Lock | Busy; readonly error?: undefined }
  | { readonly outcome?: undefined; readonly error: unknown };
