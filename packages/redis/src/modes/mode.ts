import type { AcquireRequest, AttemptResult, Capabilities, Grant } from '@deadbolt/core/adapter';
import type { RedisMode } from '../options.js';

/**
 * One lock algorithm. The backend wraps every call with the deadline, the error mapping and the
 * release notifications; a mode only talks to Redis, one atomic script per check-and-act.
 */
export interface LockMode {
  readonly mode: RedisMode;
  readonly capabilities: Capabilities;
  /** One attempt; `token` (random, per attempt) is what an undo compares, where the mode uses one. */
  tryAcquire(request: AcquireRequest, token?: string): Promise<AttemptResult>;
  /**
   * Best-effort undo of an attempt whose answer never came (issue 14): removes what this attempt's
   * `token` may have written, and nothing else. Absent: the mode undoes by itself (redlock).
   */
  undoAcquire?(request: AcquireRequest, token: string): Promise<unknown>;
  /** A token in the mode's own format, where its scripts read one (fair); else the backend's tokens are used. */
  tokenFor?(request: AcquireRequest): string;
  renew(grant: Grant, ttlMs: number): Promise<boolean>;
  /** One round trip per connection. Throws when the outcome of any renewal is unknown. */
  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]>;
  release(grant: Grant): Promise<boolean>;
  /** Whether a release publishes on releaseChannel(key), so the backend can offer waitForChange. */
  readonly publishesReleases: boolean;
  close(): Promise<void>;
}

/** Capabilities every Redis mode shares; each mode overrides what differs. */
export const baseCapabilities = {
  consistency: 'AP',
  lease: 'ttl',
  minTtlMs: 1,
  // Redis allows 512 MB keys; locks do not need them, and every script copies the key.
  maxKeyBytes: 8_192,
  // inspect, forceRelease, list (operations.ts)
  operations: true,
} as const;
