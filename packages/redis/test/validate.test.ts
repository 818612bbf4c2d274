import { startRedis, startRedisMasters, type ServerHandle } from '@deadbolt/conformance/servers';
import { BackendUnavailableError, createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisBackend, type RedisBackend } from '../src/index.js';
import { kindKeys } from '../src/modes/fair-kinds.js';
import { grantOf, Opened, request } from './support.js';

// validate() where the conformance suite does not reach: fair read/write/permit holds (their holder
// entries and server-clock lease ends) and RedLock's majority.
let server: ServerHandle;
let masters: ServerHandle[];
const opened = new Opened();
const clients: LockClient[] = [];
const backends: RedisBackend[] = [];

beforeAll(async () => {
  [server, masters] = await Promise.all([startRedis(), startRedisMasters(5)]);
});
afterEach(async () => {
  await Promise.all([...clients.splice(0), ...backends.splice(0)].map((client) => client.close()));
  await opened.closeAll();
});
afterAll(() => Promise.all([server, ...(masters ?? [])].filter(Boolean).map((s) => s.stop())));

function fairClient(): LockClient {
  const client = createLockClient({ url: `${server.url}?mode=fair`, prefix: `v-${Math.random().toString(36).slice(2)}:` });
  clients.push(client);
  return client;
}

describe('validate on redis fair read-write locks and semaphores', () => {
  it('a read, a write and a permit validate while held, and not after release', async () => {
    const locks = fairClient();
    const rw = locks.readWriteLock('rw');
    const readers = [await rw.read.acquire(), await rw.read.acquire()];
    for (const read of readers) expect(await read.validate()).toBe(true);
    await readers[0]!.release();
    expect(await readers[0]!.validate()).toBe(false);
    expect(await readers[1]!.validate()).toBe(true);
    await readers[1]!.release();
    const write = await rw.write.acquire();
    expect(await write.validate()).toBe(true);
    const permit = await locks.semaphore('sem', { permits: 2 }).acquire();
    expect(await permit.validate()).toBe(true);
    await Promise.all([write.release(), permit.release()]);
    expect(await write.validate()).toBe(false);
    expect(await permit.validate()).toBe(false);
  });

  it('a hold whose entries the server lost validates false and is declared lost', async () => {
    const locks = fairClient();
    const read = await locks.readWriteLock('gone').read.acquire({ ttlMs: 60_000 });
    const raw = opened.raw(server.url);
    // The hold's full key is the client's prefix + 'gone'; its entries live in kindKeys(<full key>, 'rw').
    const [fullKey] = (await raw.keys('*gone*rw:meta')).map((key) => key.slice(1, key.indexOf('}')));
    expect(fullKey).toBeDefined();
    await raw.del(...kindKeys(fullKey!, 'rw'));
    expect(await read.validate()).toBe(false);
    expect(read.held).toBe(false);
  });
});

describe('validate on RedLock', () => {
  function redlock(): RedisBackend {
    const backend = createRedisBackend({
      mode: 'redlock',
      nodes: masters.map((master) => `${master.host}:${master.port}`),
      commandTimeoutMs: 1_000,
    });
    backends.push(backend);
    return backend;
  }

  it('holds while a majority of the masters carry the token, not once a majority lost it', async () => {
    const backend = redlock();
    const grant = await grantOf(backend, request('rl:validate', 60_000));
    expect(await backend.validate(grant)).toBe(true);
    await Promise.all(masters.slice(0, 2).map((master) => opened.raw(master.url).del('rl:validate')));
    expect(await backend.validate(grant)).toBe(true);
    await opened.raw(masters[2]!.url).del('rl:validate');
    expect(await backend.validate(grant)).toBe(false);
  });

  it('is unknown (a typed error), not false, when the silent masters could make up the majority', async () => {
    const backend = redlock();
    const grant = await grantOf(backend, request('rl:silent', 60_000));
    await opened.raw(masters[0]!.url).del('rl:silent');
    await Promise.all(masters.slice(3).map((master) => master.pause()));
    try {
      // Two masters hold it, one does not, two are silent: 2 + 2 could still be a majority.
      await expect(backend.validate(grant)).rejects.toBeInstanceOf(BackendUnavailableError);
    } finally {
      await Promise.all(masters.slice(3).map((master) => master.resume()));
    }
  });
});
