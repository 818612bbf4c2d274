/**
 * The local end of a lease of `ttlMs` that the server started no earlier than `sentAt` (client
 * clock): the ttl less a drift allowance of 1% + 2 ms (the Redlock specification's), so a holder
 * stops trusting its lease before any server with a slightly fast clock lets it expire. Core bounds
 * every lease so; an adapter that knows better when a grant began (a queued grant, a session that
 * connected first) bounds its `grant.validUntil` with the same rule.
 */
export function leaseValidUntil(sentAt: number, ttlMs: number): number {
  return sentAt + ttlMs - Math.ceil(ttlMs * 0.01) - 2;
}
