import type { Etcd3, IKeyValue, IRangeRequest } from 'etcd3';
import { prefixEnd } from './keys.js';

/**
 * The lock recipe of etcd's Go `concurrency.Mutex` (mutex.go), apart from the adapter contract:
 * put our key with our lease in a txn (if it does not exist yet), the lowest create_revision under
 * the prefix holds, and a waiter watches only the key just below its own for its deletion (no herd,
 * FIFO by revision). Each function is one or a few etcd calls; deadlines are passed in.
 */

/** What a contender learned from its create txn. */
export interface Contention {
  /** Our key's create_revision: the fence (lock) or term (election). */
  readonly myRevision: string;
  /** The holder's create_revision (ours when we hold). */
  readonly ownerRevision: string;
  /** The store's revision when the txn ran: where a waiter starts watching. */
  readonly headerRevision: string;
  /** The holder's value (an election's leader). */
  readonly ownerValue: Buffer | undefined;
}

type CallOptions = { readonly deadline: number };

const firstCreated = (prefix: Buffer): IRangeRequest => ({
  key: prefix,
  range_end: prefixEnd(prefix),
  sort_target: 'Create',
  sort_order: 'Ascend',
  limit: 1,
});

/**
 * Go's `tryAcquire`: if our key is absent, put it with the lease; else read it. Either way read the
 * first-created key under the prefix, in the same txn (so the two agree on one revision).
 */
export async function createContender(
  client: Etcd3,
  prefix: string,
  key: string,
  value: Buffer,
  leaseId: string,
  options: CallOptions,
): Promise<Contention> {
  const keyBytes = Buffer.from(key, 'utf8');
  const owner = { request_range: firstCreated(Buffer.from(prefix, 'utf8')) };
  const response = await client.kv.txn(
    {
      compare: [{ key: keyBytes, target: 'Create', result: 'Equal', create_revision: 0 }],
      success: [{ request_put: { key: keyBytes, value, lease: leaseId } }, owner],
      failure: [{ request_range: { key: keyBytes } }, owner],
    },
    options,
  );
  const headerRevision = response.header.revision;
  const mine = response.succeeded ? headerRevision : response.responses[0]?.response_range.kvs[0]?.create_revision;
  if (mine === undefined) throw new Error(`the contender key vanished inside its own txn`);
  const holder: IKeyValue | undefined = response.responses[1]?.response_range.kvs[0];
  return {
    myRevision: mine,
    ownerRevision: holder?.create_revision ?? mine,
    headerRevision,
    ownerValue: holder?.value,
  };
}

/** Deletes our key only while it is the one we created (compare create_revision): never another's. */
export async function deleteContender(client: Etcd3, key: string, revision: string, options: CallOptions): Promise<boolean> {
  const keyBytes = Buffer.from(key, 'utf8');
  const response = await client.kv.txn(
    {
      compare: [{ key: keyBytes, target: 'Create', result: 'Equal', create_revision: revision }],
      success: [{ request_delete_range: { key: keyBytes } }],
    },
    options,
  );
  return response.succeeded;
}

/** Whether our key still exists as we created it, on our lease (a renewal's check). */
export async function contenderAlive(
  client: Etcd3,
  key: string,
  revision: string,
  leaseId: string,
  options: CallOptions,
): Promise<boolean> {
  const response = await client.kv.range({ key: Buffer.from(key, 'utf8') }, options);
  const kv = response.kvs[0];
  return kv !== undefined && kv.create_revision === revision && kv.lease === leaseId;
}

/** etcd's default --max-txn-ops: the most reads one txn may carry. */
const maxTxnOps = 128;

/**
 * contenderAlive for many keys, 128 reads to a txn (the txns in parallel): what auto-renewal of
 * 10,000 held locks costs per tick is 79 calls, not 10,000.
 */
export async function contendersAlive(
  client: Etcd3,
  contenders: readonly { readonly key: string; readonly revision: string; readonly leaseId: string }[],
  options: CallOptions,
): Promise<boolean[]> {
  const chunks: (typeof contenders)[] = [];
  for (let start = 0; start < contenders.length; start += maxTxnOps) chunks.push(contenders.slice(start, start + maxTxnOps));
  const answers = await Promise.all(
    chunks.map((chunk) =>
      client.kv.txn({ compare: [], success: chunk.map(({ key }) => ({ request_range: { key: Buffer.from(key, 'utf8') } })) }, options),
    ),
  );
  return answers.flatMap((answer, index) =>
    chunks[index]!.map((contender, at) => {
      const kv = answer.responses[at]?.response_range.kvs[0];
      return kv !== undefined && kv.create_revision === contender.revision && kv.lease === contender.leaseId;
    }),
  );
}

/** The value of the first-created key under the prefix (an election's leader), or undefined. */
export async function firstContender(client: Etcd3, prefix: string, options: CallOptions): Promise<Buffer | undefined> {
  const response = await client.kv.range(firstCreated(Buffer.from(prefix, 'utf8')), options);
  return response.kvs[0]?.value;
}

/**
 * Go's `waitDeletes`: until no key under the prefix was created before us, watch the newest of
 * those (the one just below ours) for its deletion. True when we are first; false at the deadline
 * or on abort. A waiter thus wakes only when its own predecessor goes.
 */
export async function waitForPredecessors(
  client: Etcd3,
  prefix: string,
  myRevision: string,
  deadline: number,
  signal: AbortSignal,
  callTimeoutMs: number,
): Promise<boolean> {
  const prefixBytes = Buffer.from(prefix, 'utf8');
  const maxCreate = (BigInt(myRevision) - 1n).toString();
  for (;;) {
    if (signal.aborted || Date.now() >= deadline) return false;
    let response: Awaited<ReturnType<Etcd3['kv']['range']>>;
    try {
      response = await client.kv.range(
        {
          key: prefixBytes,
          range_end: prefixEnd(prefixBytes),
          sort_target: 'Create',
          sort_order: 'Descend',
          limit: 1,
          max_create_revision: maxCreate,
        },
        { deadline: Math.min(deadline, Date.now() + callTimeoutMs) },
      );
    } catch (error) {
      // The wait's own deadline cut this read short: a timeout, not a failure of the server.
      if (signal.aborted || Date.now() >= deadline) return false;
      throw error;
    }
    const predecessor = response.kvs[0];
    if (predecessor === undefined) return true;
    const deleted = await waitForDelete(client, predecessor.key, (BigInt(response.header.revision) + 1n).toString(), deadline, signal);
    if (!deleted) return false;
  }
}

/**
 * How often a waiter looks again without news: a watch that failed (its start revision compacted
 * away, say) or an event that never came must not leave it waiting until its deadline.
 */
const recheckMs = 5_000;

/**
 * Resolves true when `key` may be gone (its delete event, a watch error, or `recheckMs` without
 * news: the caller then reads the queue again), false at the deadline or on abort.
 */
export async function waitForDelete(
  client: Etcd3,
  key: Buffer,
  fromRevision: string,
  deadline: number,
  signal: AbortSignal,
): Promise<boolean> {
  // An abort during the range before this: a listener added now would never hear it.
  if (signal.aborted) return false;
  // watcher(), not create(): create() waits for the stream to connect, which a dead server never does.
  const watcher = client.watch().key(key).startRevision(fromRevision).only('delete').watcher();
  try {
    return await new Promise<boolean>((resolve) => {
      const finish = (lookAgain: boolean): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', aborted);
        resolve(lookAgain);
      };
      const aborted = (): void => finish(false);
      const left = deadline - Date.now();
      const timer = setTimeout(() => finish(left > recheckMs), Math.max(0, Math.min(left, recheckMs)));
      signal.addEventListener('abort', aborted, { once: true });
      watcher.on('delete', () => finish(true));
      watcher.on('error', () => finish(true));
    });
  } finally {
    // Not awaited: a cancel waits for the server's answer, which a frozen server never sends.
    watcher.cancel().catch(() => undefined);
  }
}
