import type { AcquireRequest, Grant } from '../backend.js';

/**
 * What the server answered to one queueing call of a token (the first attempt or a re-check): it
 * holds the lock now (its fence), or it stands queued behind a holder whose lease has
 * `holderRemainingMs` left (null: unknown, re-check after a heartbeat period).
 */
export type QueueAnswer =
  | { readonly held: true; readonly fence: number; readonly sentAt?: number | undefined }
  | { readonly held: false; readonly holderRemainingMs: number | null; readonly sentAt?: number | undefined };

/**
 * A heartbeat's answer for one queued token: a QueueAnswer (held: the grant was made unheard; not
 * held: the entry was kept alive), or 'recheck' when the server says the entry is gone or the lock
 * is free, so the waiter looks again now.
 */
export type HeartbeatAnswer = QueueAnswer | 'recheck';

/** One token waiting in the server's queue, as the port's heartbeat receives it. */
export interface QueuedToken {
  readonly request: AcquireRequest;
  readonly token: string;
}

/** Where the port delivers what its grant channel hears. */
export interface GrantSink {
  /** A grant message: the server granted the lock in place to `token` with `fence`. */
  granted(token: string, fence: number): void;
  /** The channel broke (messages may have been lost meanwhile): every waiter re-checks. */
  broken(): void;
}

/**
 * The server side of a FIFO queue whose server grants the lock in place to the head waiter and
 * sends that waiter's client one message (Redis `fair`, PostgreSQL `lease`): the calls a
 * ServerQueue (server-queue.ts) makes. About `sentAt` in answers: when the adapter knows its call
 * left later than it was asked for (a session connected first), it says so, and the queue bounds
 * leases from that time; otherwise the queue uses the time it asked.
 */
export interface ServerQueuePort<G extends Grant = Grant> {
  /** The backend's name, for errors. */
  readonly backend: string;
  /** How long a silent waiter keeps its place (server clock); the queue heartbeats every third of it. */
  readonly waiterLeaseMs: number;
  /** A new token for `request`, unique within this queue: grant messages name only the token. */
  tokenFor(request: AcquireRequest): string;
  /**
   * The queueing call for `token`: takes a free lock, or queues (or stays queued) behind its holder.
   * A call that fails or never answers is the port's to undo (guardCall's `undo` leaving by token):
   * the queue only reports the failure.
   */
  attempt(request: AcquireRequest, token: string): Promise<QueueAnswer>;
  /** The grant of `token` with `fence`, bounded by `validUntil` when the queue knows it (client clock). */
  grantOf(request: AcquireRequest, token: string, fence: number, validUntil: number | undefined): G;
  /** Leaves the queue: removes the entry, or gives back (passes on) a grant that raced the give-up. Safe to repeat. */
  leave(request: AcquireRequest, token: string): Promise<unknown>;
  /** Keeps every queued token's entry alive in as few calls as it can; one answer per token, in order. */
  heartbeat(tokens: readonly QueuedToken[]): Promise<readonly HeartbeatAnswer[]>;
  /** Extends grants to `ttlMs[i]` (compare-and-extend, as renewMany); one answer per grant, in order. */
  extend(grants: readonly G[], ttlMs: readonly number[]): Promise<readonly boolean[]>;
  /**
   * True when grant messages for `key` are heard now; else a promise settled once they are, or once
   * subscribing failed (the next call tries again). Asked at every wait and every heartbeat tick.
   */
  listening(key: string): true | Promise<void>;
  /** Called once, by the queue's constructor: the grant channel delivers into `sink` from then on. */
  subscribe(sink: GrantSink): void;
}
