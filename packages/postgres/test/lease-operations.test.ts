import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, ForcedReleaseError, LockLostError, UnsupportedOperationError, type LockClient } from '@deadbolt/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresBackend } from '../src/index.js';

/** What the shared operations group does not check: the queue moves on, kinds are marked, prefixes are literal. */
let server: PostgresServerHandle;
let admin: pg.Client;
const clients: LockClient[] = [];
beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await admin?.end();
  await server?.stop();
});

const client = (): LockClient => {
  const made = createLockClient({ backend: createPostgresBackend(`${server.url}?mode=lease`) });
  clients.push(made);
  return made;
};

const holdMs = 60_000;

describe('postgres:lease operator API', () => {
  it('forceRelease hands the lock to the queued waiter at once, not at the end of the holder lease', async () => {
    const [holder, waiter, operator] = [client(), client(), client()];
    const lock = await holder.acquire('force/queued', { ttlMs: holdMs });
    const waiting = waiter.acquire('force/queued', { ttlMs: holdMs, waitMs: 20_000 });
    await expect.poll(async () => (await operator.inspect('force/queued')).waiters, { timeout: 10_000 }).toBe(1);
    const forcedAt = Date.now();
    expect(await operator.forceRelease('force/queued')).toBe(true);
    // Granted in place in the same transaction: the waiter holds the row before its client hears of it.
    const handedOn = await operator.inspect('force/queued');
    expect(handedOn.holders).toEqual([expect.objectContaining({ kind: 'mutex' })]);
    expect(handedOn.holders[0]!.fence!).toBeGreaterThan(lock.fence!);
    const next = await waiting;
    console.info(`[force queued] the waiter got the lock ${Date.now() - forcedAt} ms after forceRelease (holder lease ${holdMs} ms)`);
    expect(next.fence!).toBeGreaterThan(lock.fence!);
    const seen = await operator.inspect('force/queued');
    expect(seen.holders).toEqual([expect.objectContaining({ kind: 'mutex', fence: next.fence })]);
    expect(seen.waiters).toBeUndefined();
    await next.release();
    await lock.release().catch(() => undefined);
  });

  it('forceRelease grants the semaphore to its queued waiter in the same transaction', async () => {
    const [holder, waiter, operator] = [client(), client(), client()];
    const permit = await holder.semaphore('force/sem', { permits: 1 }).acquire({ ttlMs: holdMs });
    const waiting = waiter.semaphore('force/sem', { permits: 1 }).acquire({ ttlMs: holdMs, waitMs: 20_000 });
    await expect.poll(async () => (await operator.inspect('force/sem')).waiters, { timeout: 10_000 }).toBe(1);
    expect(await operator.forceRelease('force/sem')).toBe(true);
    const handedOn = await operator.inspect('force/sem');
    expect(handedOn.holders).toEqual([expect.objectContaining({ kind: 'permit' })]);
    expect(handedOn.holders[0]!.fence!).toBeGreaterThan(permit.fence!);
    const next = await waiting;
    expect(next.fence).toBe(handedOn.holders[0]!.fence);
    await next.release();
    await permit.release().catch(() => undefined);
  });

  it("a forced writer's renewal reads the marker: its signal aborts with a ForcedReleaseError naming the operator", async () => {
    const [holder, operator] = [client(), client()];
    const write = await holder.readWriteLock('force/rw').write.acquire({ ttlMs: 1_500, autoRenew: true });
    expect(await operator.forceRelease('force/rw')).toBe(true);
    if (!write.signal.aborted) await new Promise((resolve) => write.signal.addEventListener('abort', resolve, { once: true }));
    const reason: unknown = write.signal.reason;
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).cause).toBeInstanceOf(ForcedReleaseError);
    // The marker row the renewal read: one, for the write hold's token, naming the forcing client.
    const by = ((reason as LockLostError).cause as ForcedReleaseError).by;
    const marker = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM deadbolt_locks_forced WHERE forced_by = $1', [by]);
    expect(marker.rows[0]!.n).toBe(1);
    expect((await operator.inspect('force/rw')).held).toBe(false);
  });

  it("list takes the prefix literally: LIKE's % and _ match only themselves", async () => {
    const [holder, operator] = [client(), client()];
    const locks = await Promise.all(['a%b/1', 'axb/1', 'a_c/1', 'abc/1'].map((key) => holder.acquire(key, { ttlMs: holdMs })));
    const listed = async (prefix: string): Promise<string[]> => {
      const keys: string[] = [];
      for await (const seen of operator.list({ prefix })) keys.push(seen.key);
      return keys.sort();
    };
    expect(await listed('a%')).toEqual(['a%b/1']);
    expect(await listed('a_')).toEqual(['a_c/1']);
    await Promise.all(locks.map((lock) => lock.release()));
    expect(await listed('a')).toEqual([]);
  });

  it('advisory mode answers inspect only: forceRelease and list are refused, each named, before any I/O (nothing listens on port 1)', async () => {
    const advisory = createLockClient({ backend: createPostgresBackend('postgres://nobody:secret@127.0.0.1:1/none?mode=advisory') });
    clients.push(advisory);
    await expect(advisory.forceRelease('k')).rejects.toThrow(/capabilities\.operations does not include 'forceRelease'/);
    await expect(advisory.forceRelease('k')).rejects.toBeInstanceOf(UnsupportedOperationError);
    await expect(advisory.list()[Symbol.asyncIterator]().next()).rejects.toThrow(/capabilities\.operations does not include 'list'/);
    await expect(advisory.list()[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(UnsupportedOperationError);
  });
});
