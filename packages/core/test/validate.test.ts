import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryBackend, MemoryBackend, memoryStore, type Grant } from '../src/adapter/index.js';
import {
  BackendUnavailableError,
  createLockClient,
  InvalidArgumentError,
  LockLostError,
  UnsupportedOperationError,
  type LockClient,
} from '../src/index.js';
import { nextEvent, SpyBackend, uniqueName } from './helpers.js';

const clients: LockClient[] = [];

function client(backend: MemoryBackend | SpyBackend): LockClient {
  const made = createLockClient({ backend });
  clients.push(made);
  return made;
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

/** A memory backend whose validate calls are counted, and can be made to fail or batch. */
class CountingValidate extends MemoryBackend {
  validations = 0;
  batches = 0;
  fail = false;
  override async validate(grant: Grant): Promise<boolean> {
    this.validations += 1;
    if (this.fail) throw new Error('connection reset');
    return super.validate(grant);
  }
  override async validateMany(grants: readonly Grant[]): Promise<readonly boolean[]> {
    this.batches += 1;
    return super.validateMany(grants);
  }
}

function counting(label: string): CountingValidate {
  return new CountingValidate(memoryStore(uniqueName(label)));
}

describe('lock.validate()', () => {
  it('is true while held and false after release, without I/O once released', async () => {
    const backend = counting('validate-held');
    const lock = await client(backend).acquire('k');
    expect(await lock.validate()).toBe(true);
    await lock.release();
    const before = backend.store.operations;
    expect(await lock.validate()).toBe(false);
    expect(backend.store.operations).toBe(before);
  });

  it('is false once another owner holds the key, and declares the lock lost', async () => {
    const backend = counting('validate-taken');
    const locks = client(backend);
    const lock = await locks.acquire('k', { ttlMs: 60_000 });
    // The server forgot our hold (a failover, a flushed key) while our local deadline still runs.
    backend.store.delete('k');
    const other = await client(new MemoryBackend(backend.store)).acquire('k');
    expect(lock.held).toBe(true);
    const lost = nextEvent(locks, 'lost');
    expect(await lock.validate()).toBe(false);
    expect((await lost).key).toBe('k');
    expect(lock.held).toBe(false);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(await other.validate()).toBe(true);
  });

  it('compares the grant, not the owner: a newer hold of the same owner does not validate an older handle', async () => {
    const backend = counting('validate-token');
    const locks = client(backend);
    const first = await locks.acquire('k', { owner: 'worker-1', ttlMs: 60_000 });
    backend.store.delete('k');
    const second = await client(new MemoryBackend(backend.store)).acquire('k', { owner: 'worker-1' });
    expect(await first.validate()).toBe(false);
    expect(await second.validate()).toBe(true);
  });

  it('refuses with UnsupportedOperationError before any I/O on a backend without validate', async () => {
    const spy = new SpyBackend(uniqueName('validate-unsupported'));
    const lock = await client(spy).acquire('k');
    const before = spy.store.operations;
    const error = await lock.validate().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnsupportedOperationError);
    expect(String((error as Error).message)).toMatch(/validate.*spy-memory|spy-memory.*validate/);
    expect(spy.store.operations).toBe(before);
  });

  it('rejects with BackendUnavailableError when the server fails, and keeps the lock', async () => {
    const backend = counting('validate-fails');
    const lock = await client(backend).acquire('k');
    backend.fail = true;
    await expect(lock.validate()).rejects.toBeInstanceOf(BackendUnavailableError);
    expect(lock.held).toBe(true);
  });

  it('answers for read, write and permit holds', async () => {
    const backend = counting('validate-kinds');
    const locks = client(backend);
    const rw = locks.readWriteLock('rw');
    const read = await rw.read.acquire();
    expect(await read.validate()).toBe(true);
    await read.release();
    expect(await read.validate()).toBe(false);
    const write = await rw.write.acquire();
    expect(await write.validate()).toBe(true);
    const permit = await locks.semaphore('s', { permits: 2 }).acquire();
    expect(await permit.validate()).toBe(true);
    await permit.release();
    expect(await permit.validate()).toBe(false);
    expect(await write.validate()).toBe(true);
  });
});

describe('multiLock.validate() and term.validate()', () => {
  it('asks once for every key of a multi-lock; false when one key is gone', async () => {
    const backend = counting('validate-multi');
    const locks = client(backend);
    const multi = await locks.acquireAll(['a', 'b', 'c'], { ttlMs: 60_000 });
    expect(await multi.validate()).toBe(true);
    expect(backend.batches).toBe(1);
    expect(backend.validations).toBe(3);
    backend.store.delete('b');
    expect(await multi.validate()).toBe(false);
    expect(multi.held).toBe(false);
    await multi.release();
    expect(await multi.validate()).toBe(false);
  });

  it('a term validates while leading and not after the body ended', async () => {
    const backend = counting('validate-term');
    const election = client(backend).elect('e', { id: 'me' });
    const iterator = election[Symbol.asyncIterator]();
    const term = (await iterator.next()).value;
    expect(await term.validate()).toBe(true);
    await election.resign();
    expect(await term.validate()).toBe(false);
  });
});

describe('option expiringThresholdMs', () => {
  it('is validated before any I/O', async () => {
    const backend = createMemoryBackend(uniqueName('threshold-input'));
    const locks = client(backend);
    await expect(locks.acquire('k', { expiringThresholdMs: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(locks.acquire('k', { expiringThresholdMs: 1.5 })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(() => createLockClient({ url: 'memory://', defaults: { expiringThresholdMs: 'soon' as never } })).toThrow(InvalidArgumentError);
    expect(backend.store.operations).toBe(0);
  });
});
