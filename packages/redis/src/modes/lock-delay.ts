import type { AcquireRequest, Grant } from '@deadbolt/core/adapter';

/**
 * Lock-delay on one Redis server (setnx, hash-reentrant): the key's expiry on the server is
 * ttl + lockDelayMs, set by the grant and by every renewal, while the holder's own validity stays
 * ttl (core's lease). A holder that stops renewing thus leaves the key taken for the delay after
 * its lease, on the server's clock; a release deletes the key and delays nothing.
 */

/** The PX of a grant: the lease plus the delay. */
export function serverExpiryMs(request: AcquireRequest): number {
  return request.ttlMs + (request.lockDelayMs ?? 0);
}

/** The PX of a renewal of `grant` for `ttlMs`: the grant's delay comes again. */
export function renewalExpiryMs(grant: Grant, ttlMs: number): number {
  return ttlMs + (grant.lockDelayMs ?? 0);
}

/** The grant, with the request's delay recorded for its renewals. */
export function withLockDelay<G extends Grant>(grant: G, request: AcquireRequest): G {
  const lockDelayMs = request.lockDelayMs ?? 0;
  return lockDelayMs > 0 ? { ...grant, lockDelayMs } : grant;
}
