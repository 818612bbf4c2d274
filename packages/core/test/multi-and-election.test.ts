import { afterEach, describe, expect, it } from 'vitest';
import { MemoryBackend, memoryCapabilities, memoryStore, type AcquireRequest, type Grant } from '../src/adapter/index.js';
import { createLockClient, InvalidArgumentError, LockTimeoutError, UnsupportedOperationError, type LockClient } from '../src/index.js';
import { freshMemory, uniqueName } from './helpers.js';

const clients: LockClient[] = [];
function track(client: LockClient): LockClient {
  clients.push(client);
  return client;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

/** The memory backend without its atomic step: core's one-by-one path in a global order. Records the order of calls. */
class OneByOne extends MemoryBackend {
  readonly calls: string[] = [];
  constructor(...args: ConstructorParameters<typeof MemoryBackend>) {
    super(...args);
    Object.defineProperty(this, 'tryAcquireMany', { value: undefined });
  }
  override tryAcquire(request: AcquireRequest) {
    this.calls.push(`take ${request.key}`);
    return super.tryAcquire(request);
  }
  override release(grant: Grant) {
    this.calls.push(`release ${grant.key}`);
    return super.release(grant);
  }
}

/** A backend that offers no election (as memcached). */
class NoElection extends MemoryBackend {
  // A class field is not on the prototype: super.capabilities would be undefined here.
  override readonly capabilities = { ...memoryCapabilities, election: false };
}

describe('acquireAll', () => {
  it('rejects bad keys with InvalidArgumentError before any I/O', async () => {
    const { url, store } = freshMemory('multi-validation');
    const client = track(createLockClient(url));
    const before = store.operations;
    for (const keys of [[], ['a', 'a'], ['a', ''], 'a', [1]] as unknown[]) {
      await expect(client.acquireAll(keys as string[])).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    await expect(client.acquireAll(['a'], { nope: 1 } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(store.operations).toBe(before);
  });

  it('one by one: takes keys in sorted order whatever the caller lists, releases in reverse', async () => {
    const backend = new OneByOne(memoryStore(uniqueName('multi-order')));
    const client = track(createLockClient({ backend, prefix: 'p:' }));
    const all = await client.acquireAll(['c', 'a', 'b']);
    expect(all.keys).toEqual(['a', 'b', 'c']);
    expect([...all.fences.keys()]).toEqual(['a', 'b', 'c']);
    await all.release();
    expect(backend.calls).toEqual(['take p:a', 'take p:b', 'take p:c', 'release p:c', 'release p:b', 'release p:a']);
  });

  it('one by one: a busy key releases what was taken, and the error names the busy key', async () => {
    const name = uniqueName('multi-rollback');
    const holder = track(createLockClient({ backend: new MemoryBackend(memoryStore(name)) }));
    const backend = new OneByOne(memoryStore(name));
    const client = track(createLockClient({ backend }));
    const busy = await holder.acquire('b');
    const error = await client.acquireAll(['a', 'b', 'c'], { waitMs: 50 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).key).toBe('b');
    expect(client.heldCount).toBe(0);
    expect(backend.calls.filter((call) => call.startsWith('release'))).toEqual(['release a']);
    await busy.release();
  });

  it('a lost key aborts the multi-lock signal', async () => {
    const { url, store } = freshMemory('multi-lost');
    const client = track(createLockClient(url));
    const all = await client.acquireAll(['x', 'y'], { ttlMs: 10_000 });
    store.delete('y');
    await expect(all.renew()).rejects.toThrow(/lost/);
    expect(all.signal.aborted).toBe(true);
    expect(all.held).toBe(false);
    await all.release();
  });
});

describe('elect', () => {
  it('rejects bad options with InvalidArgumentError at once', () => {
    const client = track(createLockClient(freshMemory('elect-validation').url));
    expect(() => client.elect('', { id: 'a' })).toThrow(InvalidArgumentError);
    expect(() => client.elect('e', { id: '' })).toThrow(InvalidArgumentError);
    expect(() => client.elect('e', { id: 'a', layout: 'x' } as never)).toThrow(InvalidArgumentError);
    expect(() => client.elect('e', { id: 'a', waitMs: 1 } as never)).toThrow(InvalidArgumentError);
  });

  it('a backend without election refuses with UnsupportedOperationError', async () => {
    const client = track(createLockClient({ backend: new NoElection(memoryStore(uniqueName('no-election'))) }));
    const election = client.elect('e', { id: 'a' });
    const error = await election[Symbol.asyncIterator]()
      .next()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnsupportedOperationError);
    expect(String(error)).toMatch(/election.*memory/);
    await expect(election.leader()).rejects.toBeInstanceOf(UnsupportedOperationError);
  });

  it('breaking out of the loop resigns; the user signal ends the candidacy with its reason', async () => {
    const { url } = freshMemory('elect-loop');
    const [a, b] = [track(createLockClient(url)), track(createLockClient(url))];
    const first = a.elect('e', { id: 'a' });
    for await (const term of first) {
      expect(term.id).toBe('a');
      break;
    }
    expect(await first.leader()).toBeNull();
    const controller = new AbortController();
    const held = await (async () => {
      for await (const term of b.elect('e', { id: 'b' })) return term;
      return undefined;
    })();
    expect(held?.signal.aborted).toBe(true); // left the loop: resigned
    const waiting = a.elect('e', { id: 'c', signal: controller.signal });
    const other = b.elect('e', { id: 'd' });
    const iterator = other[Symbol.asyncIterator]();
    await iterator.next();
    const pending = waiting[Symbol.asyncIterator]().next();
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
    await other.resign();
  });
});
