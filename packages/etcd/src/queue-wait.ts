import type { Etcd3, IKeyValue } from 'etcd3';
import { prefixEnd } from './keys.js';
import { waitForDelete } from './mutex-recipe.js';

/**
 * The wait shared by the read-write lock and the multi-lock: a contender holds once no key blocks
 * it, and until then watches only the one key that blocks it (the newest of them) for its deletion.
 * Which keys block is the kind's own rule (rw-recipe.ts); this file is the loop and the reads.
 */

/** A key that blocks us, and the store's revision when it was read (where its watch starts). */
export interface Blocker {
  readonly key: Buffer;
  readonly headerRevision: string;
}

/** Finds the key that blocks us now, or undefined when nothing does. One or two reads. */
export type FindBlocker = () => Promise<Blocker | undefined>;

/**
 * The newest key under `prefix` created before `myRevision` (Go's `WithLastCreate` +
 * `WithMaxCreateRev(myRevision - 1)`), or undefined. One read, bounded by callTimeoutMs.
 */
export async function newestBelow(
  client: Etcd3,
  prefix: string,
  myRevision: string,
  callTimeoutMs: number,
): Promise<{ readonly kv: IKeyValue | undefined; readonly headerRevision: string }> {
  const prefixBytes = Buffer.from(prefix, 'utf8');
  const response = await client.kv.range(
    {
      key: prefixBytes,
      range_end: prefixEnd(prefixBytes),
      sort_target: 'Create',
      sort_order: 'Descend',
      limit: 1,
      max_create_revision: (BigInt(myRevision) - 1n).toString(),
    },
    { deadline: Date.now() + callTimeoutMs },
  );
  return { kv: response.kvs[0], headerRevision: response.header.revision };
}

/**
 * Looks once whatever the deadline (a tryAcquire, or an acquire with waitMs 0, still takes a free
 * lock), then watches the blocker for its deletion and looks again. True when nothing blocks us;
 * false at the deadline or on abort. `onBlocked` is called once, when the first look finds a blocker.
 */
export async function waitUntilUnblocked(
  client: Etcd3,
  findBlocker: FindBlocker,
  deadline: number,
  signal: AbortSignal,
  onBlocked?: () => void,
): Promise<boolean> {
  for (let looks = 0; ; looks += 1) {
    if (signal.aborted) return false;
    let blocker: Blocker | undefined;
    try {
      blocker = await findBlocker();
    } catch (error) {
      // The wait's own deadline cut this read short: a timeout, not a failure of the server.
      if (looks > 0 && (signal.aborted || Date.now() >= deadline)) return false;
      throw error;
    }
    if (blocker === undefined) return true;
    if (looks === 0) onBlocked?.();
    if (Date.now() >= deadline) return false;
    const from = (BigInt(blocker.headerRevision) + 1n).toString();
    if (!(await waitForDelete(client, blocker.key, from, deadline, signal))) return false;
  }
}
