import { encodeKey } from './keys.js';
import { getWithCas } from './protocol.js';

/**
 * `validate(grant)`: the item the grant stored (its lock key, or its semaphore slot's) still holds
 * this grant's token. One GET; the server's expiry decides, so an expired item is simply absent.
 */
export async function holdsToken(client: unknown, storedKey: string, token: string): Promise<boolean> {
  const current = await getWithCas(client, encodeKey(storedKey));
  return current !== undefined && current.value.toString('utf8') === token;
}
