/**
 * Memcached expiry is whole seconds, and a value above 30 days (2 592 000 s) is read as an absolute
 * Unix time (protocol.txt, "Expiration times"). Leases are rounded UP to whole seconds, so a lease
 * is never shorter than asked; beyond 30 days the absolute form is used, which then depends on the
 * client's clock agreeing with the server's.
 * Memcached's own clock also ticks once a second, so an item stored with exptime N may expire
 * anywhere in (N-1, N] seconds later: one more second keeps every lease at least as long as asked.
 */
export const relativeExpiryLimitSeconds = 60 * 60 * 24 * 30;

export function expirySeconds(ttlMs: number, now: number = Date.now()): number {
  const seconds = Math.max(1, Math.ceil(ttlMs / 1000)) + 1;
  return seconds <= relativeExpiryLimitSeconds ? seconds : Math.ceil(now / 1000) + seconds;
}
