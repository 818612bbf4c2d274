import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { memoryCapabilities, type MemoryStore } from '../src/adapter/index.js';
import { createLockClient, InvalidArgumentError, type LockClient } from '../src/index.js';
import { freshMemory } from './helpers.js';

let client: LockClient;
let store: MemoryStore;
let url: string;

beforeEach(() => {
  ({ url, store } = freshMemory('validation'));
  client = createLockClient(url);
});

afterEach(async () => {
  await client.close();
});

/** Every call must reject with InvalidArgumentError and leave the store untouched (no I/O). */
async function expectRejectedBeforeIo(call: () => Promise<unknown>, argument: string | RegExp): Promise<InvalidArgumentError> {
  const before = store.operations;
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidArgumentError);
  const invalid = error as InvalidArgumentError;
  if (typeof argument === 'string') expect(invalid.argument).toBe(argument);
  else expect(invalid.argument).toMatch(argument);
  expect(invalid.code).toBe('INVALID_ARGUMENT');
  expect(store.operations).toBe(before);
  return invalid;
}

describe('keys', () => {
  it('rejects an empty key, naming the backend', async () => {
    const error = await expectRejectedBeforeIo(() => client.acquire(''), 'key');
    expect(error.backend).toBe('memory');
    expect(error.message).toContain('memory');
  });

  it.each([
    ['a number', 42],
    ['null', null],
    ['undefined', undefined],
    ['an object', { id: 1 }],
    ['a symbol', Symbol('k')],
  ])('rejects a key that is %s', async (_, key) => {
    await expectRejectedBeforeIo(() => client.acquire(key as never), 'key');
    await expectRejectedBeforeIo(() => client.tryAcquire(key as never), 'key');
  });

  it('rejects a key over the backend byte limit, counted in UTF-8 bytes, and names the key and limit', async () => {
    const limit = memoryCapabilities.maxKeyBytes;
    const long = 'x'.repeat(limit + 1);
    const error = await expectRejectedBeforeIo(() => client.acquire(long), 'key');
    expect(error.key).toBe(long);
    expect(error.message).toContain(String(limit));
    // 2049 characters, but 4098 bytes: the limit is in bytes.
    const wide = 'é'.repeat(limit / 2 + 1);
    expect(wide.length).toBeLessThan(limit);
    await expectRejectedBeforeIo(() => client.acquire(wide), 'key');
  });

  it('accepts a key of exactly the byte limit', async () => {
    const lock = await client.acquire('x'.repeat(memoryCapabilities.maxKeyBytes));
    await lock.release();
  });

  it('counts the prefix toward the byte limit', async () => {
    const prefixed = createLockClient({ url, prefix: 'ns:' });
    const key = 'x'.repeat(memoryCapabilities.maxKeyBytes - 2);
    await expectRejectedBeforeIo(() => prefixed.acquire(key), 'key');
    await prefixed.close();
  });

  it('accepts unicode, spaces, slashes and braces in keys', async () => {
    for (const key of ['ордер:1', 'a b', 'a/b/c', '{tag}:x', '🔒']) {
      const lock = await client.acquire(key);
      expect(lock.key).toBe(key);
      await lock.release();
    }
  });
});

describe('numbers', () => {
  it.each([0, -1, Number.NaN, 1.5, Number.POSITIVE_INFINITY, 2 ** 31, '1000', null])('rejects ttlMs %s', async (ttlMs) => {
    await expectRejectedBeforeIo(() => client.acquire('k', { ttlMs: ttlMs as number }), 'ttlMs');
    await expectRejectedBeforeIo(() => client.tryAcquire('k', { ttlMs: ttlMs as number }), 'ttlMs');
  });

  it.each([-1, Number.NaN, 2.5, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, '10'])('rejects waitMs %s', async (waitMs) => {
    await expectRejectedBeforeIo(() => client.acquire('k', { waitMs: waitMs as number }), 'waitMs');
  });

  it('accepts waitMs 0 (one attempt) and ttlMs 1', async () => {
    const lock = await client.acquire('k', { waitMs: 0, ttlMs: 1_000 });
    await lock.release();
    const short = await client.acquire('k2', { ttlMs: 1 });
    await short.release();
  });
});

describe('options', () => {
  it('rejects an unknown option, listing the known ones', async () => {
    const error = await expectRejectedBeforeIo(() => client.acquire('k', { ttl: 1000 } as never), 'option "ttl"');
    expect(error.message).toContain('ttlMs');
  });

  it('tryAcquire does not take waitMs', async () => {
    await expectRejectedBeforeIo(() => client.tryAcquire('k', { waitMs: 10 } as never), 'option "waitMs"');
  });

  it.each([
    ['autoRenew', { autoRenew: 'yes' }],
    ['signal', { signal: { aborted: false } }],
    ['owner', { owner: '' }],
    ['owner', { owner: 7 }],
    ['options', 'fast'],
    ['options', null],
  ])('rejects a bad %s', async (argument, options) => {
    await expectRejectedBeforeIo(() => client.acquire('k', options as never), argument);
  });

  it('withLock validates before running the body or touching the store', async () => {
    const body = vi.fn();
    await expectRejectedBeforeIo(() => client.withLock('', body), 'key');
    await expectRejectedBeforeIo(() => client.withLock('k', body, { ttlMs: -5 }), 'ttlMs');
    await expectRejectedBeforeIo(() => client.withLock('k', body, { color: 'red' } as never), 'option "color"');
    expect(body).not.toHaveBeenCalled();
  });

  it('an already aborted signal rejects before any I/O', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled by the caller');
    controller.abort(reason);
    const before = store.operations;
    await expect(client.acquire('k', { signal: controller.signal })).rejects.toBe(reason);
    expect(store.operations).toBe(before);
  });

  it('a valid call does reach the store (so the I/O counter can prove the others did not)', async () => {
    const before = store.operations;
    const lock = await client.acquire('k');
    expect(store.operations).toBeGreaterThan(before);
    await lock.release();
  });
});
