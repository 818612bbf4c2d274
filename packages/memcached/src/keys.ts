import { createHash } from 'node:crypto';

/**
 * Memcached keys are at most 250 bytes with no spaces or control characters (protocol.txt, "Keys").
 * Deadbolt keys are any UTF-8 text, so they are encoded injectively:
 *  - bytes 0x21..0x7e other than '%' stay as they are;
 *  - every other byte (space, control, '%', non-ASCII UTF-8) becomes `%XX` (uppercase hex);
 *  - if the result is longer than 250 bytes, it becomes `%H` + base64url(SHA-256(key)).
 * Encoded keys never contain `%H` (H is not a hex digit), so hashed and plain keys cannot collide;
 * two distinct long keys collide only on a SHA-256 collision.
 */
export const memcachedKeyLimit = 250;

/** Keys that encode to themselves: printable ASCII without '%' (the common case, checked without encoding). */
const plain = /^[!-$&-~]*$/;

export function encodeKey(key: string): string {
  if (key.length <= memcachedKeyLimit && plain.test(key)) return key;
  let out = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    out += byte > 0x20 && byte < 0x7f && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out.length <= memcachedKeyLimit) return out;
  return `%H${createHash('sha256').update(key, 'utf8').digest('base64url')}`;
}
