import type { AcquireRequest, Grant, LockBackend } from './backend.js';

/** One candidacy, as core hands it to a backend. */
export interface CampaignRequest extends AcquireRequest {
  /** The participant id, stored where `leader()` (and other clients' tools, e.g. Curator) read it. */
  readonly candidate: string;
  /** A backend-specific layout of the election's nodes (ZooKeeper: 'latch' or 'selector'). */
  readonly layout?: string;
}

/**
 * A term's grant. A campaign can wait long before it wins: `sentAt` (local Date.now()) says when the
 * winning request was sent, and the lease runs from then, not from when the campaign began.
 * Session-leased backends may leave it out.
 */
export interface TermGrant extends Grant {
  readonly sentAt?: number;
}

/**
 * Deprecated (the old style, read by contract/legacy.ts until every adapter offers drivers): an
 * election now comes as `LockBackend.election`, an ElectionDriver.
 *
 * The optional election part of the adapter contract (`client.elect`, `capabilities.election`).
 * A term is a grant: core renews it, releases it and declares it lost exactly as a lock, so a
 * leader's signal aborts before its lease (or session) can end on the server.
 */
export interface ElectionBackend extends LockBackend {
  /**
   * Waits to become the leader of `request.key`. Resolves with a grant whose `fence` is the term
   * (strictly increasing per election across leaders), or `undefined` at `deadline` or on abort,
   * leaving no candidacy behind.
   */
  campaign(request: CampaignRequest, deadline: number, signal: AbortSignal): Promise<TermGrant | undefined>;
  /** The current leader's participant id, or undefined when there is none. */
  leader(key: string, layout?: string): Promise<string | undefined>;
  /** The leader's id with its term (the grant's fence), or undefined when there is none: what `observe()` reads. */
  leaderInfo?(key: string): Promise<{ readonly id: string; readonly term: number | undefined } | undefined>;
}

/** Deprecated with ElectionBackend: core reads `driversOf(backend).election`. */
export function isElectionBackend(backend: LockBackend): backend is ElectionBackend {
  const candidate = backend as Partial<ElectionBackend>;
  return typeof candidate.campaign === 'function' && typeof candidate.leader === 'function';
}
