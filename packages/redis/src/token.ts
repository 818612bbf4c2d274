import { randomBytes } from 'node:crypto';

/** A lock value no other grant will ever carry: 128 random bits, hex (as node-redlock and redis-py do). */
export function randomToken(): string {
  return randomBytes(16).toString('hex');
}
