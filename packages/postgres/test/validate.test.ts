import { startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import pg from 'pg';
// Registers the scheme from the source, so the tests run this checkout's code, not its last build.
import '../src/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

// validate() where the conformance suite does not reach: read, write and permit holds in both modes.
let server: PostgresServerHandle;
let admin: pg.Client;
const clients: LockClient[] = [];

beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

function client(mode: 'lease' | 'advisory'): LockClient {
  const made = createLockClient({ url: `${server.url}?mode=${mode}`, prefix: `v-${Math.random().toString(36).slice(2)}:` });
  clients.push(made);
  return made;
}

describe.each(['lease', 'advisory'] as const)('postgres:%s validate', (mode) => {
  it('reads, a write and a permit validate while held, and not after release', async () => {
    const locks = client(mode);
    const rw = locks.readWriteLock('rw');
    const readers = [await rw.read.acquire(), await rw.read.acquire()];
    for (const read of readers) expect(await read.validate()).toBe(true);
    await readers[0]!.release();
    expect(await readers[0]!.validate()).toBe(false);
    expect(await readers[1]!.validate()).toBe(true);
    await readers[1]!.release();
    const write = await rw.write.acquire();
    const permit = await locks.semaphore('sem', { permits: 2 }).acquire();
    expect(await write.validate()).toBe(true);
    expect(await permit.validate()).toBe(true);
    await Promise.all([write.release(), permit.release()]);
    expect(await write.validate()).toBe(false);
    expect(await permit.validate()).toBe(false);
  });
});

describe('postgres:lease validate', () => {
  it('a read whose holder row the server lost validates false and is declared lost', async () => {
    const locks = client('lease');
    const read = await locks.readWriteLock('gone').read.acquire({ ttlMs: 60_000 });
    await admin.query("DELETE FROM deadbolt_locks_holders WHERE key LIKE '%:gone'");
    expect(await read.validate()).toBe(false);
    expect(read.held).toBe(false);
  });
});

describe('postgres:advisory validate', () => {
  it('a lock whose session the server ended validates false', async () => {
    const locks = client('advisory');
    const lock = await locks.acquire('k');
    expect(await lock.validate()).toBe(true);
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid() AND granted");
    expect(await lock.validate()).toBe(false);
    expect(lock.held).toBe(false);
  });

  it('a read hold whose session the server ended validates false', async () => {
    const locks = client('advisory');
    const read = await locks.readWriteLock('r').read.acquire();
    expect(await read.validate()).toBe(true);
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid() AND granted");
    expect(await read.validate()).toBe(false);
  });
});
