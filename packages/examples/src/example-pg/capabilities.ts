import type { Capabilities } from '@deadbolt/core/adapter';

/**
 * What the example backend promises (core and the conformance suite read these):
 * - CP as far as one PostgreSQL server is: a committed row is the lock, on a single primary.
 * - Fences from one sequence: every grant takes the next value, so they increase per key (and overall).
 * - No notifications: a waiter polls with core's backoff (LISTEN/NOTIFY would be the next step).
 * - A lease on the server's clock (`clock_timestamp()`), so client clocks never decide expiry.
 * - Keys are the primary key's text: 1024 UTF-8 bytes keeps every row well inside a btree page.
 * Everything else (read-write, semaphore, fair, election, operations, lock-delay) is absent, so
 * core refuses those primitives and the suite skips their groups, naming the capability.
 */
export const examplePgCapabilities: Capabilities = Object.freeze({
  consistency: 'CP',
  fencing: true,
  reentrant: 'client',
  notifications: false,
  lease: 'ttl',
  clock: 'server',
  minTtlMs: 10,
  maxKeyBytes: 1024,
});
