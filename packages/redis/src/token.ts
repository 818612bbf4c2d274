import { randomBytes } from 'node:crypto';

/** A lock value no other grant will ever carry: 128 random bits, hex (as node-redlock and redis-py do). */
export function randomToken(): string {
  return randomBytes(16).toString('hex');
}

/**
 * Tokens for one backend: a random 96-bit prefix per backend plus a counter. As unique as a fresh
 * random token per grant (no two backends share a prefix, no prefix repeats a counter) without a
 * call into the CSPRNG on every acquire; a token identifies a grant, it is not a secret.
 */
export class TokenSource {
  private readonly prefix = randomBytes(12).toString('hex');
  private counter = 0;

  next(): string {
    this.counter += 1;
    // 32 hex digits, like randomToken(), until the 4 billionth grant of one backend.
    return this.prefix + this.counter.toString(16).padStart(8, '0');
  }
}
