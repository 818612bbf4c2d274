import type { LockBackend } from '../contract/backend.js';
import type { LockKind } from '../contract/requests.js';
import { LockUpgradeError } from '../errors.js';
import { refusal } from '../refusal.js';
import { leaseId, type Lease } from '../engine/lease.js';

/**
 * Core policy for the kinds of hold beyond the mutex (read, write, permit): which capability each
 * needs, how holds of one owner re-enter, and what identifies a lease. The waiting loop, renewal,
 * loss and events are the mutex's own (engine/); backends only see `AcquireRequest.kind`.
 */

/** The capability a kind needs; rejects before any I/O when the backend lacks it. */
export function checkKindSupported(kind: LockKind, backend: LockBackend, key: string): void {
  const needed = kind.type === 'permit' ? 'semaphore' : 'readWrite';
  if (backend.capabilities[needed] === true) return;
  const what = needed === 'semaphore' ? 'semaphores' : 'read-write locks';
  throw refusal(
    needed === 'semaphore' ? 'semaphore' : 'readWriteLock',
    `this backend offers no ${what} (capabilities.${needed} is not true)`,
    backend,
    key,
    needed,
  );
}

/**
 * The id of a lease in the client's table. The mutex keeps its (key, owner) id. Read and write
 * holds of one owner are separate leases (a downgraded writer holds both). A permit is never
 * re-entered, so each grant is its own lease.
 */
export function kindLeaseId(fullKey: string, owner: string, kind: LockKind | undefined, token: string): string {
  if (kind === undefined) return leaseId(fullKey, owner);
  if (kind.type === 'permit') return `${fullKey}\u0000permit\u0000${token}`;
  return `${fullKey}\u0000${kind.type}\u0000${owner}`;
}

/** What the owner's current holds mean for a new request: re-enter one, or ask the backend (maybe as a downgrade). */
export type Reentry = { readonly reenter: Lease } | { readonly ask: LockKind | undefined };

/**
 * Curator's InterProcessReadWriteLock rules, per owner: a reader or writer re-enters its own hold;
 * a writer taking the read lock gets a real read hold beside its write (downgrade); a reader asking
 * for the write lock is refused (upgrade: two upgraders would deadlock). Permits never re-enter.
 */
export function planReentry(
  fullKey: string,
  owner: string,
  kind: LockKind | undefined,
  held: (id: string) => Lease | undefined,
  context: { key: string; backend: string },
): Reentry {
  if (kind === undefined) {
    const lease = live(held(leaseId(fullKey, owner)));
    return lease ? { reenter: lease } : askMutex;
  }
  if (kind.type === 'permit') return { ask: kind };
  const own = live(held(kindLeaseId(fullKey, owner, kind, '')));
  if (own) return { reenter: own };
  const write = live(held(kindLeaseId(fullKey, owner, { type: 'write' }, '')));
  if (kind.type === 'read') return { ask: write ? { type: 'read', downgradeOf: write.grant } : kind };
  if (live(held(kindLeaseId(fullKey, owner, { type: 'read' }, '')))) throw new LockUpgradeError(context);
  return { ask: kind };
}

const askMutex: Reentry = Object.freeze({ ask: undefined });

function live(lease: Lease | undefined): Lease | undefined {
  return lease && !lease.lost ? lease : undefined;
}

/** Span and event label of a kind. */
export function kindName(kind: LockKind | undefined): 'mutex' | 'read' | 'write' | 'permit' {
  return kind?.type ?? 'mutex';
}
