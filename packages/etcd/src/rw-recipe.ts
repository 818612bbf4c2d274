import type { Etcd3 } from 'etcd3';
import { prefixEnd } from './keys.js';
import { newestBelow, type FindBlocker } from './queue-wait.js';

/**
 * The read-write lock, in the layout of etcd's Go `contrib/recipes` RWMutex: under the lock's
 * prefix `N/`, a reader puts `N/read/<lease hex>[_n]` and a writer `N/write/<lease hex>[_n]`, each
 * on the client's lease, and everyone is ordered by create_revision:
 * - a reader holds when no key under `N/write/` was created before it; it watches the newest such
 *   writer (writers ahead leave in order, so the newest leaves last: one wake-up);
 * - a writer holds when no key at all under `N/` was created before it; it watches the newest one.
 * So readers queued behind a writer are admitted together when it leaves, a writer is never passed
 * by a later reader, and no release wakes more than the contenders right behind it.
 *
 * Downgrade (a write holder taking the read lock): the read must hold at once and keep writers
 * queued behind the write out until it goes, but a new key is created after those writers. So the
 * downgraded read is `N/downgrade/<lease hex>[_n]`, put only while our write key still exists (one
 * txn), and a writer is also blocked by any downgrade key: one can only exist beside a write created
 * before every queued writer. Readers ignore it (it is a read); anyone created after it sees it as
 * a key below them, which is what it is.
 */
export const readPrefix = (lockPrefix: string): string => `${lockPrefix}read/`;
export const writePrefix = (lockPrefix: string): string => `${lockPrefix}write/`;
export const downgradePrefix = (lockPrefix: string): string => `${lockPrefix}downgrade/`;

/** A reader's blocker: the newest writer created before it. */
export function readerBlocker(client: Etcd3, lockPrefix: string, myRevision: string, callTimeoutMs: number): FindBlocker {
  return async () => {
    const { kv, headerRevision } = await newestBelow(client, writePrefix(lockPrefix), myRevision, callTimeoutMs);
    return kv === undefined ? undefined : { key: kv.key, headerRevision };
  };
}

/**
 * A writer's blocker: the newest key of the lock created before it, else a downgraded read. The two
 * reads need not be one snapshot: once nothing is below us, no downgrade key can appear any more
 * (it needs a write key below us that still exists), so one seen later was there all along.
 */
export function writerBlocker(client: Etcd3, lockPrefix: string, myRevision: string, callTimeoutMs: number): FindBlocker {
  return async () => {
    const below = await newestBelow(client, lockPrefix, myRevision, callTimeoutMs);
    if (below.kv !== undefined) return { key: below.kv.key, headerRevision: below.headerRevision };
    const prefix = Buffer.from(downgradePrefix(lockPrefix), 'utf8');
    const response = await client.kv.range(
      { key: prefix, range_end: prefixEnd(prefix), limit: 1, keys_only: true },
      { deadline: Date.now() + callTimeoutMs },
    );
    const downgrade = response.kvs[0];
    return downgrade === undefined ? undefined : { key: downgrade.key, headerRevision: response.header.revision };
  };
}

/**
 * Puts the downgraded read `key` with our lease only while the write key still has the
 * create_revision it was granted with (one txn). Its create_revision, or undefined when the write
 * grant is gone (the caller then queues as an ordinary reader).
 */
export async function createDowngrade(
  client: Etcd3,
  key: string,
  leaseId: string,
  write: { readonly token: string; readonly revision: string },
  options: { readonly deadline: number },
): Promise<string | undefined> {
  const keyBytes = Buffer.from(key, 'utf8');
  const response = await client.kv.txn(
    {
      compare: [
        { key: Buffer.from(write.token, 'utf8'), target: 'Create', result: 'Equal', create_revision: write.revision },
        { key: keyBytes, target: 'Create', result: 'Equal', create_revision: 0 },
      ],
      success: [{ request_put: { key: keyBytes, value: Buffer.alloc(0), lease: leaseId } }],
    },
    options,
  );
  return response.succeeded ? response.header.revision : undefined;
}
