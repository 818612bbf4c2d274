import { randomBytes } from 'node:crypto';

/** A value no other grant will ever carry (128 random bits): the row's owner column compares it. */
export function randomToken(): string {
  return randomBytes(16).toString('hex');
}

/**
 * Tokens that only this process compares (advisory grants are found in a local map, never on the
 * server): a random prefix once, then a counter. Unique per generator without 16 random bytes per
 * grant, which cost more than the rest of an uncontended acquire's client-side work.
 */
export function localTokens(): () => string {
  const prefix = randomBytes(8).toString('hex');
  let next = 0;
  return () => `${prefix}-${(next++).toString(36)}`;
}
