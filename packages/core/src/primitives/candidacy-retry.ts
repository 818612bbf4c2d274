import type { BackoffPolicy } from '../backoff.js';
import { BackendUnavailableError, LockLostError, LockTimeoutError } from '../errors.js';

/**
 * An election's candidacy outlives an outage (Curator's LeaderLatch keeps its candidacy through a
 * reconnect): a failed campaign is tried again after this backoff, from 100 ms up to 2 s, so
 * followers neither hammer a server that is coming back nor wait long once it is up.
 */
export const candidacyBackoff: BackoffPolicy = Object.freeze({ baseMs: 100, capMs: 2_000 });

/**
 * Whether a failed campaign (or a term's release) may succeed if tried again: the server was
 * unreachable or answered late, or a grant was lost on the way. Bad input, a refused configuration,
 * an unsupported backend, a closed client and a broken promise of the backend (terms that do not
 * increase) end the candidacy instead: trying again cannot fix them.
 */
export function isTransient(error: unknown): boolean {
  return error instanceof BackendUnavailableError || error instanceof LockTimeoutError || error instanceof LockLostError;
}
