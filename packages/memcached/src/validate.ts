import type { Grant } from '@deadbolt/core/adapter';
import { encodeKey } from './keys.js';
import { getWithCas } from './protocol.js';
import { storedKeyOf } from './semaphore-slots.js';

/**
 * `validate(grant)`: the item the grant stored (its lock key, or its semaphore slot's) still holds
 * this grant's token. One GET; the server's expiry decides, so an expired item is simply absent.
 */
export async function holdsToken(client: unknown, grant: Grant): Promise<boolean> {
  const current = await getWithCas(client, encodeKey(storedKeyOf(grant)));
  return current !== undefined && current.value.toString('utf8') === grant.token;
}
