import { startEtcd, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, ForcedReleaseError, LockLostError, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend } from '../src/index.js';
import { rawClient } from './support.js';

/**
 * The operator API on etcd (operations.ts), through core's client: the forceRelease marker that
 * tells a holder who took its lock, where the marker lives, and what inspect reads of a session lease.
 */
let server: ServerHandle;
const clients: LockClient[] = [];
const sessionTtlMs = 3_000;

function client(): LockClient {
  const made = createLockClient({
    backend: createEtcdBackend(`${server.url}/ops?sessionTtlMs=${sessionTtlMs}&callTimeoutMs=2000&dialTimeoutMs=2000`),
  });
  clients.push(made);
  return made;
}

/** Resolves when the signal aborts (the test's own timeout bounds it). */
const aborted = (signal: AbortSignal): Promise<unknown> =>
  new Promise((resolve) =>
    signal.aborted ? resolve(signal.reason) : signal.addEventListener('abort', () => resolve(signal.reason), { once: true }),
  );

beforeAll(async () => {
  server = await startEtcd();
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await server?.stop();
});

describe('operations on etcd', () => {
  it("a forced holder's signal aborts with a LockLostError whose cause is a ForcedReleaseError naming the forcing client", async () => {
    const [holder, operator] = [client(), client()];
    const lock = await holder.acquire('forced/one', { ttlMs: 1_500, autoRenew: true });
    expect(await operator.forceRelease('forced/one')).toBe(true);
    const reason = await aborted(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    const cause = (reason as LockLostError).cause;
    expect(cause).toBeInstanceOf(ForcedReleaseError);
    // The forcing client's id, as its forceRelease wrote it into the marker of this very hold.
    const raw = rawClient(server.url);
    try {
      const markers = await raw.getAll().prefix(`ops/%forced/${lock.fence}/`).strings();
      expect(Object.values(markers)).toEqual([(cause as ForcedReleaseError).by]);
    } finally {
      raw.close();
    }
    expect((cause as ForcedReleaseError).by).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('the marker lies outside every lock prefix, on a lease of its own, and is never listed as a lock', async () => {
    const [holder, operator] = [client(), client()];
    const lock = await holder.acquire('marked', { ttlMs: 1_500, autoRenew: false });
    expect(await operator.forceRelease('marked')).toBe(true);
    const raw = rawClient(server.url);
    try {
      const markers = await raw.getAll().prefix('ops/%forced/').exec();
      // `<namespace>%forced/<create_revision>/<contender key>`: the revision tells a re-created key apart.
      const ours = markers.kvs.filter((kv) => kv.key.toString().includes('/ops/marked/'));
      expect(ours.length).toBe(1);
      expect(ours[0]!.value.toString()).toMatch(/^[0-9a-f-]{36}$/);
      expect(ours[0]!.key.toString()).toContain(`/${lock.fence}/`);
      const ttl = await raw.leaseClient.leaseTimeToLive({ ID: ours[0]!.lease });
      expect(Number(ttl.TTL)).toBeGreaterThan(500);
      expect(Number(ttl.TTL)).toBeLessThanOrEqual(600);
      expect(await raw.getAll().prefix('ops/marked/').count()).toBe(0);
    } finally {
      raw.close();
    }
    const listed: string[] = [];
    for await (const seen of operator.list()) listed.push(seen.key);
    expect(listed.some((key) => key.includes('%'))).toBe(false);
    await lock.release().catch(() => undefined);
  });

  it('inspect reports the session lease left (whole seconds, at most sessionTtlMs), the fence, and queued waiters', async () => {
    const [holder, waiter, operator] = [client(), client(), client()];
    const lock = await holder.acquire('queued', { ttlMs: 1_000 });
    const controller = new AbortController();
    const waiting = waiter.acquire('queued', { waitMs: 30_000, signal: controller.signal }).catch(() => undefined);
    let seen = await operator.inspect('queued');
    for (let looks = 0; seen.waiters === undefined && looks < 200; looks += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      seen = await operator.inspect('queued');
    }
    expect(seen.holders).toHaveLength(1);
    expect(seen.holders[0]!.kind).toBe('mutex');
    expect(seen.holders[0]!.fence).toBe(lock.fence);
    const left = seen.holders[0]!.ttlLeftMs!;
    expect(left % 1000).toBe(0);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(sessionTtlMs);
    expect(seen.waiters).toBe(1);
    controller.abort();
    await waiting;
    await lock.release();
  });

  it('a read-write lock shows the writer as holder and the readers behind it as waiters', async () => {
    const [writer, reader, operator] = [client(), client(), client()];
    const write = await writer.readWriteLock('rw').write.acquire();
    const controller = new AbortController();
    const reading = reader
      .readWriteLock('rw')
      .read.acquire({ waitMs: 30_000, signal: controller.signal })
      .catch(() => undefined);
    let seen = await operator.inspect('rw');
    for (let looks = 0; seen.waiters === undefined && looks < 200; looks += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      seen = await operator.inspect('rw');
    }
    expect(seen.holders.map((hold) => hold.kind)).toEqual(['write']);
    expect(seen.waiters).toBe(1);
    controller.abort();
    await reading;
    await write.release();
  });

  it("list gives names back as they were given, plain or percent-encoded in etcd ('/', '%'), each once", async () => {
    const [holder, second, operator] = [client(), client(), client()];
    const locks = await Promise.all(['job', 'jobs/a', 'jobs/b', '50%'].map((key) => holder.acquire(key)));
    // A second contender of one name: its keys are skipped past, the name comes once.
    const controller = new AbortController();
    const waiting = second.acquire('jobs/a', { waitMs: 30_000, signal: controller.signal }).catch(() => undefined);
    const names = async (prefix: string): Promise<string[]> => {
      const found: string[] = [];
      for await (const seen of operator.list({ prefix })) found.push(seen.key);
      return found.sort();
    };
    expect(await names('job')).toEqual(['job', 'jobs/a', 'jobs/b']);
    expect(await names('jobs/')).toEqual(['jobs/a', 'jobs/b']);
    expect(await names('50%')).toEqual(['50%']);
    controller.abort();
    await waiting;
    await Promise.all(locks.map((lock) => lock.release()));
  });

  it('a queued waiter keeps its place: forcing the holder out grants the lock to the waiter at once', async () => {
    const [holder, waiter, operator] = [client(), client(), client()];
    const lock = await holder.acquire('waited');
    const contended = new Promise<void>((resolve) => waiter.once('contended', () => resolve()));
    const waiting = waiter.acquire('waited', { waitMs: 20_000 });
    await contended;
    // 'contended' comes once our key is queued (the create txn showed an older holder).
    expect((await operator.inspect('waited')).waiters).toBe(1);
    expect(await operator.forceRelease('waited')).toBe(true);
    const next = await waiting;
    expect(next.fence).toBeGreaterThan(lock.fence!);
    const seen = await operator.inspect('waited');
    expect(seen.holders.map((hold) => hold.fence)).toEqual([next.fence]);
    await next.release();
    await lock.release().catch(() => undefined);
  });
});
