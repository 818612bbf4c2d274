import { startEtcd, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, InvalidArgumentError, LockTimeoutError, type Lock, type LockClient } from '@deadbolt/core';
import type { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend } from '../src/index.js';
import { contenders, rawClient } from './support.js';

/** The read-write, semaphore and multi-lock layouts as etcd holds them (rw-recipe.ts, semaphore-recipe.ts, multi-recipe.ts). */
let server: ServerHandle;
let raw: Etcd3;
const clients: LockClient[] = [];

function client(url = server.url): LockClient {
  const made = createLockClient({ backend: createEtcdBackend(url) });
  clients.push(made);
  return made;
}

/** Resolves once `count` keys are under `prefix` (the acquire is then queued), with the acquire's promise. */
async function queuedUnder<T>(prefix: string, count: number, start: () => Promise<T>): Promise<{ done: Promise<T> }> {
  const done = start();
  done.catch(() => undefined);
  await expect.poll(async () => (await contenders(raw, prefix)).length, { timeout: 15_000 }).toBe(count);
  return { done };
}

const settled = async (promise: Promise<unknown>): Promise<boolean> => {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

beforeAll(async () => {
  server = await startEtcd();
  raw = rawClient(server.url);
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  raw?.close();
  await server?.stop();
});

describe('read-write lock', () => {
  it('a reader is N/read/<lease hex>, a writer N/write/<lease hex> (Go contrib/recipes RWMutex); fences are create_revisions', async () => {
    const read = await client().readWriteLock('layout').read.acquire();
    const writer = client();
    const { done } = await queuedUnder('layout/', 2, () => writer.readWriteLock('layout').write.acquire({ waitMs: 20_000 }));
    const [readKey, writeKey] = await contenders(raw, 'layout/');
    expect(readKey?.key).toMatch(/^layout\/read\/[0-9a-f]+$/);
    expect(writeKey?.key).toMatch(/^layout\/write\/[0-9a-f]+$/);
    expect(read.fence).toBe(readKey?.revision);
    await read.release();
    const write = await done;
    expect(write.fence).toBe(writeKey?.revision);
    await write.release();
    expect(await contenders(raw, 'layout/')).toEqual([]);
  });

  it('a downgrade is N/downgrade/<lease hex>, granted beside the write; a writer queued before it waits for it', async () => {
    const owner = client();
    const lock = owner.readWriteLock('down');
    // One owner for both (a downgrade is the same owner's read beside its write).
    const write = await lock.write.acquire({ owner: 'me' });
    const other = client();
    const { done: next } = await queuedUnder('down/', 2, () => other.readWriteLock('down').write.acquire({ waitMs: 20_000 }));
    const read = await lock.read.acquire({ owner: 'me', waitMs: 0 });
    const keys = await contenders(raw, 'down/');
    expect(keys.map((each) => each.key.replace(/[0-9a-f]+$/, '<hex>'))).toEqual([
      'down/write/<hex>',
      'down/write/<hex>',
      'down/downgrade/<hex>',
    ]);
    expect(read.fence).toBe(keys[2]?.revision);
    await write.release();
    // The queued writer now has nothing below it: only the downgrade key keeps it out.
    expect(await contenders(raw, 'down/')).toHaveLength(2);
    expect(await settled(next)).toBe(false);
    await read.release();
    await (await next).release();
  });
});

describe('semaphore', () => {
  it('each permit key N/permit/<lease hex> records the permits', async () => {
    const permit = await client().semaphore('rec', { permits: 4 }).acquire();
    const [only] = await contenders(raw, 'rec/');
    expect(only).toMatchObject({ key: expect.stringMatching(/^rec\/permit\/[0-9a-f]+$/), value: '4', revision: permit.fence });
    await permit.release();
  });

  it('another count of permits is refused against the oldest key, and the refused key is deleted again', async () => {
    const held = await client().semaphore('mismatch', { permits: 2 }).acquire();
    const error = await client()
      .semaphore('mismatch', { permits: 3 })
      .tryAcquire()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String(error)).toMatch(/in use with 2 permits, not 3/);
    expect((await contenders(raw, 'mismatch/')).map((each) => each.revision)).toEqual([held.fence]);
    await held.release();
  });

  it('a waiter counts only deletions ahead of it: one that gives up ahead admits no one, a release of any holder admits the head', async () => {
    const sem = (locks: LockClient) => locks.semaphore('count', { permits: 2 });
    const [h1, h2] = [await sem(client()).acquire(), await sem(client()).acquire()];
    const quitter = client();
    const controller = new AbortController();
    const { done: gaveUp } = await queuedUnder('count/', 3, () => sem(quitter).acquire({ waitMs: 20_000, signal: controller.signal }));
    const waiter = client();
    const { done: next } = await queuedUnder('count/', 4, () => sem(waiter).acquire({ waitMs: 20_000 }));
    controller.abort(new Error('gave up'));
    await expect(gaveUp).rejects.toThrow();
    expect(await contenders(raw, 'count/')).toHaveLength(3);
    expect(await settled(next)).toBe(false);
    // The newest holder, not the oldest: any deletion ahead counts.
    await h2.release();
    const permit: Lock = await next;
    expect(permit.held).toBe(true);
    await Promise.all([h1.release(), permit.release()]);
  });
});

describe('acquireAll', () => {
  it('queues one key per lock in one txn (one create_revision) and keeps its place in every queue while it waits', async () => {
    const holder = await client().acquire('mx');
    const multi = client();
    const { done } = await queuedUnder('my/', 1, () => multi.acquireAll(['mx', 'my'], { waitMs: 20_000 }));
    const [x, y] = [(await contenders(raw, 'mx/'))[1], (await contenders(raw, 'my/'))[0]];
    expect(x?.revision).toBe(y?.revision);
    // "my" is free, but the multi-lock stands first in its queue: a later contender waits.
    const latecomer = client();
    expect(await latecomer.tryAcquire('my')).toBeNull();
    await holder.release();
    const all = await done;
    expect([all.fences.get('mx'), all.fences.get('my')]).toEqual([x?.revision, y?.revision]);
    await all.release();
    const after = await latecomer.tryAcquire('my');
    expect(after).not.toBeNull();
    await after?.release();
  });

  it('takes 128 keys (etcd’s default --max-txn-ops) and refuses 129 with InvalidArgumentError before any I/O', async () => {
    const keys = (count: number) => Array.from({ length: count }, (_, index) => `many-${index}`);
    const all = await client().acquireAll(keys(128), { waitMs: 10_000 });
    expect(all.keys).toHaveLength(128);
    await all.release();
    // Nothing listens on port 1: any I/O would end in BackendUnavailableError, not this.
    const offline = client('etcd://127.0.0.1:1?dialTimeoutMs=1000&callTimeoutMs=1000');
    const error = await offline.acquireAll(keys(129), { waitMs: 5_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String(error)).toMatch(/at most 128 keys/);
  });

  it('a busy key ends the wait as a timeout and leaves no key of the set behind', async () => {
    const holder = await client().acquire('busy-b');
    const error = await client()
      .acquireAll(['busy-a', 'busy-b'], { waitMs: 300 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(await contenders(raw, 'busy-a/')).toEqual([]);
    expect(await contenders(raw, 'busy-b/')).toHaveLength(1);
    await holder.release();
  });
});
