import { InvalidArgumentError } from '@deadbolt/core/adapter';
import { expirySeconds } from './expiry.js';
import { encodeKey } from './keys.js';
import { add, getWithFlags, setIfCas } from './protocol.js';

/**
 * A semaphore's `permits`, recorded beside its slots so that a client passing another number for a
 * semaphore in use is refused (InvalidArgumentError) instead of silently running with its own limit.
 * The record is one item, `<key>\0permits` (NUL never occurs in a key core accepts, so no user key
 * maps onto it), ADDed by the first acquirer; the others GET and compare, in the same round trip as
 * their slot ADD. It lives as long as the semaphore is used: its expiry is a lease like a slot's,
 * pushed out (CAS-guarded SET) by an acquirer that finds it in the second half of its life; the end
 * rides in the item's flags, as a lock's does. Best effort like everything on memcached (AP): an
 * evicted or restarted server forgets it, and an idle semaphore's record expires, so a new number is
 * accepted once nobody has used the key for a lease.
 */
export function permitsKeyOf(key: string): string {
  return `${key}\u0000permits`;
}

export async function checkPermits(client: unknown, key: string, permits: number, ttlMs: number, backend: string): Promise<void> {
  const stored = encodeKey(permitsKeyOf(key));
  // Two rounds: an ADD that loses to another client's ADD (or a record expiring between the GET and the ADD) looks again.
  for (let round = 0; round < 2; round += 1) {
    const current = await getWithFlags(client, stored);
    if (current === undefined) {
      if (await addWithEnd(client, stored, permits, ttlMs)) return;
      continue;
    }
    const recorded = Number(current.value.toString('utf8'));
    if (recorded !== permits) {
      throw new InvalidArgumentError(
        'permits',
        `the semaphore is in use with ${recorded} permits, not ${permits}; every client of one key must pass the same permits`,
        { key, backend },
      );
    }
    const remainingMs = (current.flags - (Date.now() % 2 ** 32)) | 0;
    if (current.flags !== 0 && remainingMs < ttlMs / 2) {
      await setIfCas(client, stored, String(permits), expirySeconds(ttlMs), current.cas, endFlags(ttlMs)).catch(() => false);
    }
    return;
  }
}

async function addWithEnd(client: unknown, stored: string, permits: number, ttlMs: number): Promise<boolean> {
  return add(client, stored, String(permits), expirySeconds(ttlMs), endFlags(ttlMs));
}

/** The record's end on this client's clock, ms modulo 2^32, never 0 ("unknown"). */
function endFlags(ttlMs: number): number {
  return (Date.now() + ttlMs) % 2 ** 32 || 1;
}
