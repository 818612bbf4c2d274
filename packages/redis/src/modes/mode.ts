import type {
  AcquireRequest,
  AttemptResult,
  CampaignRequest,
  Capabilities,
  Grant,
  MultiAttemptResult,
  TermGrant,
} from '@deadbolt/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import type { RedisMode, ResolvedRedisOptions } from '../options.js';

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
   * Best-effort undo of an attempt whose answer never came: removes what this attempt's
   * `token` may have written, and nothing else. Absent: the mode undoes by itself (redlock).
   */
  undoAcquire?(request: AcquireRequest, token: string): Promise<unknown>;
  /** A token in the mode's own format, where its scripts read one (fair); else the backend's tokens are used. */
  tokenFor?(request: AcquireRequest): string;
  renew(grant: Grant, ttlMs: number): Promise<boolean>;
  /** One round trip per connection. Throws when the outcome of any renewal is unknown. */
  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<boolean[]>;
  release(grant: Grant): Promise<boolean>;
  /** One read, no write: true only while this exact grant holds (each mode reads its own layout). */
  validate(grant: Grant): Promise<boolean>;
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

/** A native wait: queued by the server, granted in place (fair). */
export type NativeAcquire = (request: AcquireRequest, deadline: number, signal: AbortSignal) => Promise<Grant | undefined>;

/** Resolves when the lock on `key` may have become free, or after `maxWaitMs` (a release notification). */
export type WaitForChange = (key: string, maxWaitMs: number, signal: AbortSignal) => Promise<void>;

/** What a mode is built from (modes/table.ts): the resolved options and the connections opened for it. */
export interface ModeContext {
  readonly options: ResolvedRedisOptions;
  /** The backend's name (`redis:<mode>`), for typed errors. */
  readonly name: string;
  /** The command connections: one, or RedLock's masters. */
  readonly connections: readonly (Redis | Cluster)[];
  /** The deadline of one call, for the mode's own bounded reads (the release wait's re-check). */
  readonly deadlineMs: number;
}

/**
 * Everything one mode brings to the backend: its mutex, and the primitives it offers beside it.
 * The backend guards each call (guard.ts) and wires what is present; it never asks which mode it has.
 */
export interface ModeRoom {
  readonly mutex: LockMode;
  /** The mutex's native wait (fair: the server queues the waiter and grants it in place). */
  readonly acquire?: NativeAcquire;
  /** Release notifications (setnx, hash-reentrant); absent: core polls. */
  readonly waitForChange?: WaitForChange;
  /** Read-write locks and semaphores (fair). */
  readonly kinds?: KindsMode;
  /** Multi-key locks taken in one step (setnx: one script per slot; fair: queued on every key). */
  readonly multi?: ModeMulti;
  /** Elections (setnx, fair). */
  readonly election?: ModeElection;
  /** Stops without a word to the server (simulateCrash): no timers, no leaves. */
  crash(): void;
  /** Stops politely: waiters still queued leave. */
  close(): Promise<void>;
  /** The sockets the room opened beside the command connections (subscribers), for the backend to close. */
  subscribers(): (Redis | Cluster)[];
  /** Test support: the grant subscribers stop hearing for good (the lost-message case). */
  dropGrantMessages(): void;
}

export interface ModeMulti {
  readonly tryAcquireMany?: (requests: readonly AcquireRequest[]) => Promise<MultiAttemptResult>;
  readonly acquireMany?: (
    requests: readonly AcquireRequest[],
    deadline: number,
    signal: AbortSignal,
  ) => Promise<readonly Grant[] | undefined>;
  /** Who renews, validates and releases the grants (absent: the mutex). */
  readonly keeper?: LockMode;
}

export interface ModeElection {
  readonly campaign: (request: CampaignRequest, deadline: number, signal: AbortSignal) => Promise<TermGrant | undefined>;
  readonly leader: (key: string) => Promise<string | undefined>;
  /** Who renews, validates and releases the terms. */
  readonly keeper: LockMode;
}

/** The keeper of read, write and permit holds (fair), with its native wait. */
export interface KindsMode extends LockMode {
  acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined>;
}

/** A room of just a mutex (getset, redlock) or a mutex and its release wait (setnx, hash-reentrant). */
export function plainRoom(
  mutex: LockMode,
  extra: Partial<ModeRoom> = {},
  subscribers: () => (Redis | Cluster | undefined)[] = () => [],
): ModeRoom {
  return {
    mutex,
    crash: () => undefined,
    close: () => {
      subscribers(); // stops the release wait first: its waiters wake
      return mutex.close();
    },
    subscribers: () => subscribers().filter((connection) => connection !== undefined),
    dropGrantMessages: () => undefined,
    ...extra,
  };
}
