import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryBackend, memoryCapabilities, type Capabilities, type MemoryStore } from '../src/adapter/index.js';
import { registerBackend, type BackendConfig } from '../src/adapter/index.js';
import { createLockClient, InvalidArgumentError, UnsupportedOperationError, type LockClient } from '../src/index.js';
import { freshMemory } from './helpers.js';

let store: MemoryStore;
let url: string;
const clients: LockClient[] = [];

function client(config: Parameters<typeof createLockClient>[0] = url): LockClient {
  const made = createLockClient(config);
  clients.push(made);
  return made;
}

beforeEach(() => {
  ({ url, store } = freshMemory('lock-delay'));
});

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(clients.splice(0).map((made) => made.close()));
});

/** The call rejects with `type` and the store saw no operation (nothing reached the backend). */
async function expectRefusedBeforeIo(call: () => Promise<unknown>, type: typeof InvalidArgumentError | typeof UnsupportedOperationError) {
  const before = store.operations;
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  expect(store.operations).toBe(before);
  return error as Error;
}

describe('lockDelayMs validation', () => {
  it.each([-1, 1.5, Number.NaN, 2 ** 31, '1000', null])('refuses %s before any I/O', async (value) => {
    const error = await expectRefusedBeforeIo(() => client().acquire('k', { lockDelayMs: value as number }), InvalidArgumentError);
    expect((error as InvalidArgumentError).argument).toBe('lockDelayMs');
  });

  it('accepts 0 and the largest duration', async () => {
    await (await client().acquire('a', { lockDelayMs: 0 })).release();
    await (await client().acquire('b', { lockDelayMs: 2 ** 31 - 1 })).release();
  });

  it('refuses a bad client default and a bad URL parameter when the client is made', () => {
    expect(() => createLockClient({ url, defaults: { lockDelayMs: -5 } })).toThrow(InvalidArgumentError);
    for (const bad of ['x', '-1', '1.5', '', '2147483648']) {
      expect(() => createLockClient(`${url}?lockDelayMs=${bad}`), bad).toThrow(InvalidArgumentError);
    }
    expect(() => createLockClient(`${url}?lockDelayMs=1&lockDelayMs=2`)).toThrow(InvalidArgumentError);
  });
});

describe('lockDelayMs on the memory backend (its own clock)', () => {
  it('keeps an expired, unreleased lock from others for the delay, then grants it', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    const [holder, other] = [client(), client()];
    await holder.acquire('k', { ttlMs: 100, autoRenew: false, lockDelayMs: 1_000 });
    await vi.advanceTimersByTimeAsync(150);
    expect(await other.tryAcquire('k')).toBeNull();
    await vi.advanceTimersByTimeAsync(1_099 - 150);
    expect(await other.tryAcquire('k')).toBeNull();
    await vi.advanceTimersByTimeAsync(2);
    expect(await other.tryAcquire('k')).not.toBeNull();
  });

  it('renewals keep the delay: it runs from the last renewal', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    const [holder, other] = [client(), client()];
    const lock = await holder.acquire('k', { ttlMs: 100, autoRenew: false, lockDelayMs: 1_000 });
    await vi.advanceTimersByTimeAsync(50);
    await lock.renew();
    await vi.advanceTimersByTimeAsync(1_099);
    expect(await other.tryAcquire('k')).toBeNull();
    await vi.advanceTimersByTimeAsync(2);
    expect(await other.tryAcquire('k')).not.toBeNull();
  });

  it("the holder's own lease stays ttl: it learns of its loss at ttl, not ttl + delay", async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    const lock = await client().acquire('k', { ttlMs: 100, autoRenew: false, lockDelayMs: 10_000 });
    await vi.advanceTimersByTimeAsync(100);
    expect(lock.held).toBe(false);
  });

  it('a clean release never delays', async () => {
    const lock = await client().acquire('k', { ttlMs: 100, lockDelayMs: 60_000 });
    await lock.release();
    expect(await client().tryAcquire('k')).not.toBeNull();
  });

  it('takes the client default from defaults and from the URL (which the backend never sees)', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    for (const config of [`${url}?lockDelayMs=1000`, { url, defaults: { lockDelayMs: 1_000 } }]) {
      const key = `k${clients.length}`;
      await client(config).acquire(key, { ttlMs: 100, autoRenew: false });
      await vi.advanceTimersByTimeAsync(500);
      expect(await client().tryAcquire(key)).toBeNull();
      await vi.advanceTimersByTimeAsync(700);
      expect(await client().tryAcquire(key)).not.toBeNull();
    }
  });

  it('takes the parameter out of the URL the backend is given, wherever it stands', () => {
    const seen: BackendConfig[] = [];
    registerBackend('delayprobe', (config) => {
      seen.push(config);
      return new MemoryBackend(store);
    });
    for (const text of [
      'delayprobe://h:1?lockDelayMs=5&mode=x',
      'delayprobe://h:1,h:2?mode=x&lockDelayMs=5&z=1',
      'delayprobe://h:1?lockDelayMs=5',
    ]) {
      client(text);
    }
    expect(seen.map((config) => config.urlText)).toEqual([
      'delayprobe://h:1?mode=x',
      'delayprobe://h:1,h:2?mode=x&z=1',
      'delayprobe://h:1',
    ]);
    expect(seen.map((config) => config.url?.searchParams.has('lockDelayMs'))).toEqual([false, false, false]);
  });

  it("an acquire's own 0 overrides the client default", async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    await client(`${url}?lockDelayMs=60000`).acquire('k', { ttlMs: 100, autoRenew: false, lockDelayMs: 0 });
    await vi.advanceTimersByTimeAsync(101);
    expect(await client().tryAcquire('k')).not.toBeNull();
  });
});

describe('where lock-delay cannot be enforced', () => {
  const noDelay: Capabilities = { ...memoryCapabilities, lockDelay: false };
  class NoLockDelay extends MemoryBackend {
    override readonly capabilities = noDelay;
  }

  it('refuses an acquire with a delay before any I/O, saying what the backend lacks', async () => {
    const locks = client({ backend: new NoLockDelay(store) });
    const error = await expectRefusedBeforeIo(() => locks.acquire('k', { lockDelayMs: 1_000 }), UnsupportedOperationError);
    expect(error.message).toMatch(/capabilities\.lockDelay/);
    await (await locks.acquire('k', { lockDelayMs: 0 })).release();
  });

  it('refuses a client default delay on the first acquire, before any I/O', async () => {
    const locks = client({ backend: new NoLockDelay(store), defaults: { lockDelayMs: 1_000 } });
    await expectRefusedBeforeIo(() => locks.tryAcquire('k'), UnsupportedOperationError);
  });

  it('refuses it for read, write and permit holds and for acquireAll, which keep the client default out', async () => {
    const locks = client({ url, defaults: { lockDelayMs: 1_000 } });
    await expectRefusedBeforeIo(() => locks.readWriteLock('rw').read.acquire({ lockDelayMs: 5 }), UnsupportedOperationError);
    await expectRefusedBeforeIo(() => locks.semaphore('s', { permits: 2 }).acquire({ lockDelayMs: 5 }), UnsupportedOperationError);
    await expectRefusedBeforeIo(() => locks.acquireAll(['a', 'b'], { lockDelayMs: 5 }), UnsupportedOperationError);
    // The client default is the plain lock's: the other primitives run without it.
    await (await locks.readWriteLock('rw').write.acquire()).release();
    await (await locks.acquireAll(['a', 'b'])).release();
  });
});
