import { InvalidArgumentError } from '@deadbolt/core/adapter';
import type { Etcd3 } from 'etcd3';
import { prefixEnd } from './keys.js';

/**
 * The counting semaphore, FIFO by revision: a contender puts `N/permit/<lease hex>[_n]` on the
 * client's lease, its value the semaphore's permits, and holds while fewer than `permits` keys under
 * `N/permit/` were created before it (it is among the first `permits`). A later contender counts
 * every earlier one, waiting or holding, so no one passes a waiter.
 *
 * Any deletion ahead of a waiter may admit it (a holder's release, or a waiter ahead giving up), so
 * there is no single key to watch. A waiter lists the keys ahead of it once, watches the prefix for
 * deletions from that read's revision on, and counts down only the deletions of those keys: it reads
 * again only when the count drops below `permits`, so a release costs one read, by the one waiter it
 * admits (the etcd watch still sends the event to every waiter).
 */
export const permitPrefix = (lockPrefix: string): string => `${lockPrefix}permit/`;

/**
 * The permits are recorded in every permit key; the oldest key (read in our create txn) speaks for
 * the semaphore in use. A different count is refused (the caller deletes our key again): two counts
 * on one semaphore would let each side admit its own number.
 */
export function checkPermits(
  oldest: { readonly revision: string; readonly value: Buffer | undefined },
  myRevision: string,
  permits: number,
  context: { readonly key: string; readonly backend: string },
): void {
  if (oldest.revision === myRevision || oldest.value === undefined) return;
  const recorded = oldest.value.toString('utf8');
  if (recorded === String(permits)) return;
  throw new InvalidArgumentError(
    'permits',
    `the semaphore is in use with ${recorded} permits, not ${permits}; every client of one key must pass the same permits`,
    context,
  );
}

/** How often a waiter reads the queue again without news (a failed watch, a lost event). */
const recheckMs = 5_000;

/**
 * True once fewer than `permits` keys under `prefix` are older than ours; false at the deadline or on
 * abort. Looks once whatever the deadline; `onBlocked` is called once, when the first look is full.
 */
export async function waitForPermit(
  client: Etcd3,
  prefix: string,
  myRevision: string,
  permits: number,
  wait: { readonly deadline: number; readonly signal: AbortSignal; readonly callTimeoutMs: number; readonly onBlocked?: () => void },
): Promise<boolean> {
  const prefixBytes = Buffer.from(prefix, 'utf8');
  for (let looks = 0; ; looks += 1) {
    if (wait.signal.aborted) return false;
    let response: Awaited<ReturnType<Etcd3['kv']['range']>>;
    try {
      response = await client.kv.range(
        {
          key: prefixBytes,
          range_end: prefixEnd(prefixBytes),
          keys_only: true,
          max_create_revision: (BigInt(myRevision) - 1n).toString(),
        },
        { deadline: Date.now() + wait.callTimeoutMs },
      );
    } catch (error) {
      if (looks > 0 && (wait.signal.aborted || Date.now() >= wait.deadline)) return false;
      throw error;
    }
    if (response.kvs.length < permits) return true;
    if (looks === 0) wait.onBlocked?.();
    if (Date.now() >= wait.deadline) return false;
    const ahead = new Set(response.kvs.map((kv) => kv.key.toString('latin1')));
    const from = (BigInt(response.header.revision) + 1n).toString();
    if (!(await untilFewerAhead(client, prefixBytes, from, ahead, permits, wait))) return false;
  }
}

/** Resolves true when the keys ahead may be fewer than `permits` (or on news to check), false at the deadline or on abort. */
async function untilFewerAhead(
  client: Etcd3,
  prefix: Buffer,
  fromRevision: string,
  ahead: Set<string>,
  permits: number,
  wait: { readonly deadline: number; readonly signal: AbortSignal },
): Promise<boolean> {
  if (wait.signal.aborted) return false;
  const watcher = client.watch().prefix(prefix).startRevision(fromRevision).only('delete').watcher();
  try {
    return await new Promise<boolean>((resolve) => {
      const finish = (lookAgain: boolean): void => {
        clearTimeout(timer);
        wait.signal.removeEventListener('abort', aborted);
        resolve(lookAgain);
      };
      const aborted = (): void => finish(false);
      const left = wait.deadline - Date.now();
      const timer = setTimeout(() => finish(left > recheckMs), Math.max(0, Math.min(left, recheckMs)));
      wait.signal.addEventListener('abort', aborted, { once: true });
      watcher.on('delete', (kv) => {
        ahead.delete(kv.key.toString('latin1'));
        if (ahead.size < permits) finish(true);
      });
      watcher.on('error', () => finish(true));
    });
  } finally {
    // Not awaited: a cancel waits for the server's answer, which a frozen server never sends.
    watcher.cancel().catch(() => undefined);
  }
}
