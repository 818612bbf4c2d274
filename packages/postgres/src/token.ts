import { randomBytes } from 'node:crypto';

/** A value no other grant will ever carry (128 random bits): the row's owner column compares it. */
export function randomToken(): string {
  return randomBytes(16).toString('hex');
}
