import { InvalidArgumentError, UnsupportedOperationError, type AcquireOptions, type LockClient } from '@deadbolt/core';
import type { ConformanceCase } from './context.js';
import { assert, rejection } from './util.js';

/** Keys longer than this are only tried when the backend's limit is this small (speed). */
const EXACT_LIMIT_UP_TO = 4_096;

async function expectInvalid(call: () => Promise<unknown>, what: string): Promise<void> {
  let error: unknown;
  try {
    error = await rejection(call());
  } catch (thrown) {
    error = thrown; // a synchronous throw counts too
  }
  assert(error instanceof InvalidArgumentError, `${what}: expected InvalidArgumentError, got ${String(error)}`);
}

export const badInput: ConformanceCase = {
  title: 'bad keys, ttl, waitMs and unknown options reject with InvalidArgumentError',
  async run(ctx) {
    const client = ctx.client();
    const bad: [string, () => Promise<unknown>][] = [
      ['empty key', () => client.acquire('')],
      ['non-string key', () => client.acquire(42 as unknown as string)],
      ...[0, -1, Number.NaN, 1.5].map((ttlMs): [string, () => Promise<unknown>] => [
        `ttlMs ${ttlMs}`,
        () => client.acquire('k', { ttlMs }),
      ]),
      ['waitMs -1', () => client.acquire('k', { waitMs: -1 })],
      ['unknown option', () => client.acquire('k', { colour: 'red' } as unknown as AcquireOptions)],
    ];
    for (const [what, call] of bad) await expectInvalid(call, what);
    assert(client.heldCount === 0, 'a rejected call left a lock held');
  },
};

export const oddKeys: ConformanceCase = {
  title: 'unicode, spaces, slashes and {} in keys work and stay distinct',
  async run(ctx) {
    const [a, b] = [ctx.client(), ctx.client()];
    const keys = ['ключ-🔒-鍵', 'with spaces  ', 'a/b/c', '{tag}:x', '{}', 'a'];
    const locks = await Promise.all(keys.map((key) => a.acquire(key, { waitMs: 0 })));
    for (const key of keys) assert((await b.tryAcquire(key)) === null, `key ${JSON.stringify(key)} not held`);
    locks.forEach((lock, i) => assert(lock.key === keys[i], `lock.key ${JSON.stringify(lock.key)} != ${JSON.stringify(keys[i])}`));
    await Promise.all(locks.map((lock) => lock.release()));
    const again = await b.tryAcquire(keys[0]!);
    assert(again !== null, 'unicode key still busy after release');
    await again.release();
  },
};

export const keyLimit: ConformanceCase = {
  title: 'a key at the byte limit (after the prefix) works and one byte over is rejected',
  async run(ctx) {
    const client = ctx.client();
    const room = ctx.capabilities.maxKeyBytes - Buffer.byteLength(ctx.prefix);
    const exact = room <= EXACT_LIMIT_UP_TO;
    const longest = 'x'.repeat(exact ? room : 1_024);
    const lock = await client.acquire(longest, { waitMs: 0 });
    assert((await ctx.client().tryAcquire(longest)) === null, 'a long key was not held');
    await lock.release();
    if (exact) await expectInvalid(() => client.acquire(longest + 'x'), 'key one byte over the limit');
  },
};

export const prefixesIsolate: ConformanceCase = {
  title: 'key prefixes isolate namespaces',
  async run(ctx) {
    const clients: LockClient[] = [ctx.client(`${ctx.prefix}a:`), ctx.client(`${ctx.prefix}b:`)];
    const locks = await Promise.all(clients.map((client) => client.acquire('k', { waitMs: 0 })));
    assert((await ctx.client(`${ctx.prefix}a:`).tryAcquire('k')) === null, 'the same prefix did not see the lock');
    await Promise.all(locks.map((lock) => lock.release()));
  },
};

/** A primitive the backend does not declare: a typed refusal that names the capability it lacks, no hang, nothing held. */
export const unsupportedPrimitive: ConformanceCase = {
  title: 'a read-write lock or semaphore the backend lacks rejects with UnsupportedOperationError naming the capability it lacks',
  requires: (o) =>
    o.capabilities.readWrite === true && o.capabilities.semaphore === true
      ? 'the backend offers both read-write locks and semaphores'
      : undefined,
  async run(ctx) {
    const client = ctx.client();
    const calls: [string, string, () => Promise<unknown>][] = [];
    if (ctx.capabilities.readWrite !== true)
      calls.push(
        ['readWriteLock().read.acquire', 'capabilities.readWrite', () => client.readWriteLock('k').read.acquire()],
        ['readWriteLock().write.tryAcquire', 'capabilities.readWrite', () => client.readWriteLock('k').write.tryAcquire()],
      );
    if (ctx.capabilities.semaphore !== true)
      calls.push(['semaphore().acquire', 'capabilities.semaphore', () => client.semaphore('k', { permits: 2 }).acquire()]);
    for (const [what, capability, call] of calls) {
      const error = await rejection(call());
      assert(error instanceof UnsupportedOperationError, `${what}: expected UnsupportedOperationError, got ${String(error)}`);
      const message = (error as Error).message;
      assert(message.includes(capability), `${what}: the message does not name the capability it lacks (${capability}): ${message}`);
    }
    assert(client.heldCount === 0, 'a refused call left something held');
  },
};

export const inputCases: readonly ConformanceCase[] = [badInput, oddKeys, keyLimit, prefixesIsolate, unsupportedPrimitive];
