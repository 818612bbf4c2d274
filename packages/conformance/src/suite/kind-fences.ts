import type { Acquirable, Lock, LockClient } from '@deadbolt/core';
import type { CaseContext, ConformanceCase, ResolvedOptions } from './context.js';
import { EXPIRY_SLACK_MS } from './primitives-util.js';
import { aborted, assert } from './util.js';

/**
 * Fences of readers, writers and permits across idle moments: every grant of a key, whatever its
 * kind, carries a fence larger than every fence before it, also after the key went idle (nothing
 * held, nothing queued) and, on ttl backends, after a hold expired (when a backend may have
 * dropped everything it kept for the key). A counter kept beside the holders, and dropped with
 * them, starts again at 1: the resource then takes an old fence for a new one.
 */
const needsFencing = (o: ResolvedOptions): string | undefined => (o.capabilities.fencing ? undefined : 'capabilities.fencing is false');

/** The fences seen so far, in grant order (each acquire ends before the next starts). */
class FenceLog {
  private readonly seen: string[] = [];
  private last = Number.NEGATIVE_INFINITY;

  /** Records the fence of a grant that is `what`; it must be larger than every one before. */
  note(what: string, lock: Lock): Lock {
    const fence = lock.fence;
    assert(typeof fence === 'number', `${what}: a fenced backend gave no fence`);
    this.seen.push(`${what} ${fence}`);
    assert(fence > this.last, `fences not strictly increasing across idle moments: ${this.seen.join(', ')}`);
    this.last = fence;
    return lock;
  }
}

/**
 * On a ttl backend: `count` holds of `side` that nobody renews or releases run out (their client
 * sees the loss, the server's leases end within the slack), and `next` takes the key `count` times,
 * each waiting for a lapsed hold to go: larger fences, though the server may have dropped the key.
 */
async function afterExpiry(ctx: CaseContext, log: FenceLog, side: Acquirable, next: Acquirable, what: string, count = 1): Promise<void> {
  if (ctx.capabilities.lease !== 'ttl') return;
  const lapsed: Lock[] = [];
  for (let i = 0; i < count; i += 1)
    lapsed.push(log.note(`${what} left to expire`, await side.acquire({ ttlMs: ctx.ttlMs, autoRenew: false, waitMs: 10_000 })));
  await Promise.all(lapsed.map((lock) => aborted(lock.signal, ctx.ttlMs * 3 + 5_000)));
  const waitMs = ctx.ttlMs + EXPIRY_SLACK_MS + (ctx.capabilities.minTtlMs >= 1_000 ? ctx.capabilities.minTtlMs : 0) + 10_000;
  const taken: Lock[] = [];
  for (let i = 0; i < count; i += 1) taken.push(log.note(`${what} after the expiry`, await next.acquire({ waitMs })));
  await Promise.all(taken.map((lock) => lock.release()));
}

const rwOf = (client: LockClient) => client.readWriteLock('fenced-rw');

export const readFencesAfterIdle: ConformanceCase = {
  title: 'rw: reader and writer fences keep increasing after the key goes idle (released, or a hold expired): a writer after readers too',
  requires: (o) => (o.capabilities.readWrite === true ? needsFencing(o) : 'capabilities.readWrite is not true'),
  async run(ctx) {
    const [a, b, writer] = [ctx.client(), ctx.client(), ctx.client()];
    const log = new FenceLog();
    await log.note('read', await rwOf(a).read.acquire()).release();
    await log.note('read after idle', await rwOf(a).read.acquire()).release();
    const readers = [log.note('read', await rwOf(a).read.acquire()), log.note('a second read beside it', await rwOf(b).read.acquire())];
    await Promise.all(readers.map((lock) => lock.release()));
    await log.note('write after the readers', await rwOf(writer).write.acquire()).release();
    await log.note('read after the writer', await rwOf(b).read.acquire()).release();
    await afterExpiry(ctx, log, rwOf(a).read, rwOf(writer).write, 'read');
    await log.note('read after all that', await rwOf(b).read.acquire()).release();
  },
};

const PERMITS = 3;
const semOf = (client: LockClient) => client.semaphore('fenced-sem', { permits: PERMITS });

export const permitFencesAfterIdle: ConformanceCase = {
  title: 'semaphore: permit fences keep increasing after the semaphore goes idle (released, or a permit expired)',
  requires: (o) => (o.capabilities.semaphore === true ? needsFencing(o) : 'capabilities.semaphore is not true'),
  async run(ctx) {
    const [a, b] = [ctx.client(), ctx.client()];
    const log = new FenceLog();
    await log.note('permit', await semOf(a).acquire()).release();
    await log.note('permit after idle', await semOf(a).acquire()).release();
    const held = [log.note('permit', await semOf(a).acquire()), log.note('a second permit beside it', await semOf(b).acquire())];
    await Promise.all(held.map((lock) => lock.release()));
    await log.note('permit after both left', await semOf(b).acquire()).release();
    await afterExpiry(ctx, log, semOf(a), semOf(b), 'permit', PERMITS);
    await log.note('permit after all that', await semOf(a).acquire()).release();
  },
};
