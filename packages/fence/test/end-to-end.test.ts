import { startPostgres, startRedis, type PostgresServerHandle, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type Lock, type LockClient } from '@deadbolt/core';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StaleFenceError } from '../src/index.js';
import { admitFence } from '../src/postgres.js';
import { fencedSet } from '../src/redis.js';

/**
 * The failure fencing exists for, on real servers: holder A stalls past its lease without renewing,
 * B takes the lock (a larger fence) and writes; A wakes and writes as if it still held the lock.
 */
async function stallAndTakeOver(a: LockClient, b: LockClient, key: string): Promise<[Lock, Lock]> {
  const first = await a.acquire(key, { ttlMs: 500, autoRenew: false });
  // A does nothing from here on (its stall); B's acquire returns once A's lease ran out.
  const second = await b.acquire(key, { ttlMs: 30_000, waitMs: 30_000 });
  expect(second.fence).toBeGreaterThan(first.fence!);
  return [first, second];
}

describe('on PostgreSQL (lease mode locks, admitFence in the data transaction)', () => {
  let server: PostgresServerHandle;
  let data: pg.Pool;
  let a: LockClient;
  let b: LockClient;
  beforeAll(async () => {
    server = await startPostgres();
    data = new pg.Pool({ connectionString: server.url, max: 4 });
    data.on('error', () => undefined); // an idle connection ended by the server's stop at the end
    await data.query('CREATE TABLE accounts (id text PRIMARY KEY, owner text NOT NULL)');
    await data.query("INSERT INTO accounts VALUES ('acct:1', 'nobody')");
    a = createLockClient(`${server.url}?mode=lease`);
    b = createLockClient(`${server.url}?mode=lease`);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await data?.end();
    await server?.stop();
  });

  const writeOwner = async (lock: Lock, owner: string): Promise<void> => {
    const client = await data.connect();
    try {
      await client.query('BEGIN');
      await admitFence(client, lock.key, lock.fence!);
      await client.query("UPDATE accounts SET owner = $1 WHERE id = 'acct:1'", [owner]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  };

  it("A's late write is refused with StaleFenceError and the data holds B's value", async () => {
    const [stalled, current] = await stallAndTakeOver(a, b, 'acct:1');
    await writeOwner(current, 'B');
    const late = await writeOwner(stalled, 'A').catch((error: unknown) => error);
    expect(late).toBeInstanceOf(StaleFenceError);
    expect(late).toMatchObject({ resource: 'acct:1', fence: stalled.fence, newerFence: current.fence });
    expect((await data.query("SELECT owner FROM accounts WHERE id = 'acct:1'")).rows[0]).toEqual({ owner: 'B' });
    await current.release();
  });
});

describe('on Redis (setnx locks, fencedSet on the data key)', () => {
  let server: ServerHandle;
  let data: Redis;
  let a: LockClient;
  let b: LockClient;
  beforeAll(async () => {
    server = await startRedis();
    data = new Redis(server.url, { maxRetriesPerRequest: 1 });
    a = createLockClient(`${server.url}?mode=setnx`);
    b = createLockClient(`${server.url}?mode=setnx`);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await data?.quit().catch(() => data.disconnect());
    await server?.stop();
  });

  it("A's late fencedSet is refused with StaleFenceError and the key holds B's value", async () => {
    // The lock key and the data key differ: the lock's own value lives at its key.
    const [stalled, current] = await stallAndTakeOver(a, b, 'lock:cart:7');
    await fencedSet(data, 'cart:7', 'written by B', current.fence!);
    const late = await fencedSet(data, 'cart:7', 'written by A', stalled.fence!).catch((error: unknown) => error);
    expect(late).toBeInstanceOf(StaleFenceError);
    expect(late).toMatchObject({ resource: 'cart:7', fence: stalled.fence, newerFence: current.fence });
    expect(await data.get('cart:7')).toBe('written by B');
    await current.release();
  });
});
