import { afterEach, describe, expect, it } from 'vitest';
import { createLockClient, InvalidArgumentError, LockUpgradeError, UnsupportedOperationError, type LockClient } from '../src/index.js';
import { MemoryBackend, memoryCapabilities } from '../src/adapter/index.js';
import { freshMemory } from './helpers.js';

const opened: LockClient[] = [];
function client(url: string): LockClient {
  const made = createLockClient(url);
  opened.push(made);
  return made;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

describe('read-write locks (memory)', () => {
  it('readers share, a writer waits for them, and a released writer admits the next', async () => {
    const { url } = freshMemory('rw-basic');
    const [a, b, c] = [client(url), client(url), client(url)];
    const r1 = await a.readWriteLock('doc').read.acquire();
    const r2 = await b.readWriteLock('doc').read.acquire({ waitMs: 0 });
    expect(await c.readWriteLock('doc').write.tryAcquire()).toBeNull();
    expect(r2.fence!).toBeGreaterThan(r1.fence!);
    await Promise.all([r1.release(), r2.release()]);
    const w = await c.readWriteLock('doc').write.acquire({ waitMs: 0 });
    expect(await a.readWriteLock('doc').read.tryAcquire()).toBeNull();
    await w.release();
    expect(a.heldCount + b.heldCount + c.heldCount).toBe(0);
  });

  it('the same flow re-enters its read or write hold; downgrade is granted at once; upgrade is refused before any I/O', async () => {
    const { url, store } = freshMemory('rw-reentry');
    const locks = client(url);
    const rw = locks.readWriteLock('doc');
    await rw.write.withLock(async () => {
      const again = await rw.write.acquire({ waitMs: 0 });
      const read = await rw.read.acquire({ waitMs: 0 }); // downgrade: beside the write hold
      expect(locks.heldCount).toBe(2);
      await again.release();
      await read.release();
    });
    await rw.read.withLock(async () => {
      const before = store.operations;
      await expect(rw.write.acquire({ waitMs: 0 })).rejects.toBeInstanceOf(LockUpgradeError);
      expect(store.operations).toBe(before);
    });
    expect(locks.heldCount).toBe(0);
  });

  it('a backend without read-write locks rejects before any I/O, naming the capability it lacks and the docs page, no backend list', async () => {
    const { name, store } = freshMemory('rw-unsupported');
    const limited = new (class extends MemoryBackend {
      override readonly capabilities = { ...memoryCapabilities, readWrite: false, semaphore: false };
    })(store, 'limited');
    const locks = createLockClient({ backend: limited });
    opened.push(locks);
    const before = store.operations;
    const error = await locks
      .readWriteLock('doc')
      .read.acquire()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnsupportedOperationError);
    expect((error as Error).message).toMatch(/capabilities\.readWrite is not true/);
    expect((error as Error).message).toMatch(/see 'Choosing a backend' in the Deadbolt docs/);
    // Which backends offer what is the docs' to say: core names none but the one in use.
    expect((error as Error).message).not.toMatch(/zookeeper|postgres|redis|memcached/);
    const semaphoreError = await locks
      .semaphore('q', { permits: 2 })
      .tryAcquire()
      .catch((e: unknown) => e);
    expect(semaphoreError).toBeInstanceOf(UnsupportedOperationError);
    expect((semaphoreError as Error).message).toMatch(/capabilities\.semaphore is not true/);
    expect((semaphoreError as Error).message).not.toMatch(/zookeeper|postgres|redis|memcached/);
    expect(store.operations).toBe(before);
    void name;
  });

  it("adds the adapter's capabilityHint for the missing capability to the refusal", async () => {
    const { store } = freshMemory('rw-hint');
    const asked: string[] = [];
    const hinting = new (class extends MemoryBackend {
      override readonly capabilities = { ...memoryCapabilities, readWrite: false, election: false };
      capabilityHint(capability: string): string | undefined {
        asked.push(capability);
        return capability === 'readWrite' ? 'use ?mode=fair for read-write locks' : undefined;
      }
    })(store, 'hinting');
    const locks = createLockClient({ backend: hinting });
    opened.push(locks);
    const error = await locks
      .readWriteLock('doc')
      .write.tryAcquire()
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /capabilities\.readWrite is not true\); use \?mode=fair for read-write locks; see 'Choosing a backend' in the Deadbolt docs/,
    );
    const electionError = await locks
      .elect('e', { id: 'a' })
      [Symbol.asyncIterator]()
      .next()
      .catch((e: unknown) => e);
    expect(electionError).toBeInstanceOf(UnsupportedOperationError);
    expect((electionError as Error).message).toMatch(/capabilities\.election is not true\); see 'Choosing a backend'/);
    expect(asked).toEqual(['readWrite', 'election']);
  });
});

describe('semaphores (memory)', () => {
  it('holds up to permits, refuses one more, and each acquire is one more permit', async () => {
    const { url } = freshMemory('sem-basic');
    const locks = client(url);
    const sem = locks.semaphore('quota', { permits: 2 });
    const [p1, p2] = await Promise.all([sem.acquire(), sem.acquire()]);
    expect(await client(url).semaphore('quota', { permits: 2 }).tryAcquire()).toBeNull();
    await p1!.release();
    const p3 = await client(url).semaphore('quota', { permits: 2 }).acquire({ waitMs: 0 });
    await Promise.all([p2!.release(), p3.release()]);
  });

  it('rejects bad permits before any I/O, and a different permits for a semaphore in use', async () => {
    const { url, store } = freshMemory('sem-input');
    const locks = client(url);
    for (const permits of [0, -1, 1.5, Number.NaN, '3']) {
      expect(() => locks.semaphore('q', { permits: permits as number })).toThrow(InvalidArgumentError);
    }
    expect(() => locks.semaphore('q', { permits: 1, extra: 1 } as never)).toThrow(InvalidArgumentError);
    expect(store.operations).toBe(0);
    const held = await locks.semaphore('q', { permits: 3 }).acquire();
    await expect(client(url).semaphore('q', { permits: 4 }).tryAcquire()).rejects.toBeInstanceOf(InvalidArgumentError);
    await held.release();
  });
});
