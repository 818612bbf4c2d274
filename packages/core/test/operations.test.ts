import { describe, expect, it } from 'vitest';
import type { AcquireRequest, AttemptResult, Grant, LockBackend } from '../src/adapter/index.js';
import {
  createLockClient,
  ForcedReleaseError,
  InvalidArgumentError,
  LockLostError,
  UnsupportedOperationError,
  type LeaderChange,
} from '../src/index.js';
import { memoryCapabilities } from '../src/memory/backend.js';
import { freshMemory } from './helpers.js';

/** A backend with no operator methods (PostgreSQL, ZooKeeper, memcached and etcd today) that counts its calls. */
function withoutOperations(): LockBackend & { calls: number } {
  const backend = {
    name: 'stub',
    capabilities: memoryCapabilities,
    calls: 0,
    async tryAcquire(_request: AcquireRequest): Promise<AttemptResult> {
      backend.calls += 1;
      return { acquired: false };
    },
    async renew(_grant: Grant): Promise<boolean> {
      backend.calls += 1;
      return false;
    },
    async release(_grant: Grant): Promise<boolean> {
      backend.calls += 1;
      return false;
    },
    async close(): Promise<void> {},
  };
  return backend;
}

describe('the operator API', () => {
  it('a backend without the operator methods refuses inspect, forceRelease and list with UnsupportedOperationError before any I/O', async () => {
    const backend = withoutOperations();
    const client = createLockClient({ backend });
    await expect(client.inspect('k')).rejects.toBeInstanceOf(UnsupportedOperationError);
    await expect(client.forceRelease('k')).rejects.toBeInstanceOf(UnsupportedOperationError);
    await expect(client.list()[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(UnsupportedOperationError);
    expect(backend.calls).toBe(0);
    await client.close();
  });

  it('a backend declaring only inspect answers it and refuses forceRelease and list, naming each operation, before any I/O', async () => {
    const backend = withoutOperations();
    let inspected = 0;
    const partial = Object.assign(backend, {
      capabilities: { ...memoryCapabilities, operations: ['inspect'] as const },
      operations: {
        inspect: async () => {
          inspected += 1;
          return { holders: [] };
        },
      },
    });
    const client = createLockClient({ backend: partial });
    expect((await client.inspect('k')).held).toBe(false);
    expect(inspected).toBe(1);
    const forced = await client.forceRelease('k').catch((error: unknown) => error);
    expect(forced).toBeInstanceOf(UnsupportedOperationError);
    expect(String((forced as Error).message)).toContain("capabilities.operations does not include 'forceRelease'");
    const listed = await client
      .list()
      [Symbol.asyncIterator]()
      .next()
      .catch((error: unknown) => error);
    expect(listed).toBeInstanceOf(UnsupportedOperationError);
    expect(String((listed as Error).message)).toContain("does not include 'list'");
    expect(backend.calls).toBe(0);
    expect(inspected).toBe(1);
    await client.close();
  });

  it('bad keys and list options are refused with InvalidArgumentError before any I/O', async () => {
    const memory = freshMemory('ops-input');
    const client = createLockClient(memory.url);
    const before = memory.store.operations;
    await expect(client.inspect('')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(client.forceRelease('a\u0000b')).rejects.toBeInstanceOf(InvalidArgumentError);
    for (const options of [{ limit: 0 }, { limit: 1.5 }, { prefix: 3 }, { bogus: true }])
      await expect(
        client
          .list(options as never)
          [Symbol.asyncIterator]()
          .next(),
      ).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(() => client.elect('e', { id: 'x' }).observe({ intervalMs: 0 })).toThrow(InvalidArgumentError);
    expect(memory.store.operations).toBe(before);
    await client.close();
  });

  it('memory tells a forced holder at once: its signal aborts with a LockLostError caused by a ForcedReleaseError naming the forcing client', async () => {
    const memory = freshMemory('ops-forced');
    const holder = createLockClient(memory.url);
    const operator = createLockClient(memory.url);
    const lock = await holder.acquire('k', { ttlMs: 60_000 });
    const events: unknown[] = [];
    operator.on('forced', (event) => events.push(event));
    expect(await operator.forceRelease('k')).toBe(true);
    // No renewal has run (ttl 60 s): the abort came from the forceRelease itself.
    expect(lock.signal.aborted).toBe(true);
    const reason = lock.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.cause).toBeInstanceOf(ForcedReleaseError);
    expect((reason.cause as ForcedReleaseError).by).toMatch(/^[0-9a-f-]{36}$/);
    expect(events).toEqual([{ key: 'k', released: true }]);
    await Promise.all([holder.close(), operator.close()]);
  });

  it('observe ends without an error when its signal aborts, and when the client closes', async () => {
    const memory = freshMemory('ops-observe');
    const client = createLockClient(memory.url);
    const stop = new AbortController();
    const seen: LeaderChange[] = [];
    const done = (async () => {
      for await (const change of client.elect('e', { id: 'w' }).observe({ signal: stop.signal, intervalMs: 10 })) {
        seen.push(change);
        stop.abort();
      }
    })();
    await done;
    expect(seen).toEqual([{ leader: null, term: null }]);
    const untilClosed = (async () => {
      for await (const _ of client.elect('e', { id: 'w' }).observe({ intervalMs: 10 })) void _;
    })();
    await client.close();
    await expect(untilClosed).resolves.toBeUndefined();
  });
});
