import { InvalidArgumentError } from '@deadbolt/core/adapter';
import type { Etcd3 } from 'etcd3';

/**
 * acquireAll on etcd: our contender key in every lock's queue, all put in ONE txn, so all of them
 * share one create_revision. Two multi-locks (or a multi-lock and a single lock) then stand in the
 * same relative order in every queue they share, since that order is their revisions' order: every
 * waiter waits only for lower revisions, so no cycle of waiters can form. Then we wait queue by
 * queue, with the mutex's watch on the key just below ours.
 *
 * etcd refuses a txn of more than `--max-txn-ops` operations (128 by default). A set is not split
 * into several txns: two overlapping sets split differently would get different relative orders in
 * different queues, which is the deadlock this layout rules out. So a larger set is refused before
 * any I/O.
 */
export const maxTxnOps = 128;

export function checkMultiSize(count: number, context: { readonly key: string; readonly backend: string }): void {
  if (count <= maxTxnOps) return;
  throw new InvalidArgumentError(
    'keys',
    `acquireAll on etcd takes at most ${maxTxnOps} keys (etcd's default --max-txn-ops: all keys are queued in one txn); got ${count}`,
    context,
  );
}

/** Puts every key with our lease if none exists yet, in one txn; the keys' common create_revision. */
export async function createAll(
  client: Etcd3,
  keys: readonly string[],
  leaseId: string,
  options: { readonly deadline: number },
): Promise<string> {
  const keyBytes = keys.map((key) => Buffer.from(key, 'utf8'));
  const response = await client.kv.txn(
    {
      compare: keyBytes.map((key) => ({ key, target: 'Create' as const, result: 'Equal' as const, create_revision: 0 })),
      success: keyBytes.map((key) => ({ request_put: { key, value: Buffer.alloc(0), lease: leaseId } })),
    },
    options,
  );
  // Our slots are reserved locally (held-keys.ts) and named by our lease: only a stray of ours can be there.
  if (!response.succeeded) throw new Error('a contender key of this client already existed; nothing was queued');
  return response.header.revision;
}
