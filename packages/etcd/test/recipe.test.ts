import { startEtcd, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type Lock, type LockClient } from '@deadbolt/core';
import type { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend } from '../src/index.js';
import { contenders, rawClient } from './support.js';

/** The Go recipe's queue as etcd holds it: one key per contender, served by create_revision. */
let server: ServerHandle;
let raw: Etcd3;
const clients: LockClient[] = [];

function client(): LockClient {
  const made = createLockClient({ backend: createEtcdBackend(server.url) });
  clients.push(made);
  return made;
}

/**
 * Starts an acquire and resolves once its key is in the queue (`length` contenders under `name/`).
 * Wrapped: an async function returning the acquire's promise would wait for the lock itself.
 */
async function queued(locks: LockClient, name: string, length: number): Promise<{ lock: Promise<Lock> }> {
  const lock = locks.acquire(name, { waitMs: 20_000 });
  lock.catch(() => undefined);
  await expect.poll(async () => (await contenders(raw, `${name}/`)).length, { timeout: 15_000 }).toBe(length);
  return { lock };
}

beforeAll(async () => {
  server = await startEtcd();
  raw = rawClient(server.url);
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  raw?.close();
  await server?.stop();
});

describe('the queue', () => {
  it('serves waiters in the order they queued; each fence is its key\u2019s create_revision', async () => {
    const holder = await client().acquire('fifo');
    const waiters = [await queued(client(), 'fifo', 2), await queued(client(), 'fifo', 3), await queued(client(), 'fifo', 4)].map(
      (each) => each.lock,
    );
    const revisions = (await contenders(raw, 'fifo/')).map((each) => each.revision);
    expect(holder.fence).toBe(revisions[0]);
    await holder.release();
    const fences: number[] = [];
    for (const waiter of waiters) {
      const lock = await waiter;
      fences.push(lock.fence!);
      await lock.release();
    }
    expect(fences).toEqual(revisions.slice(1));
  });

  it('tryAcquire never jumps a queued waiter, even right after the holder released', async () => {
    const holder = await client().acquire('nobarge');
    const { lock: waiter } = await queued(client(), 'nobarge', 2);
    await holder.release();
    const latecomer = client();
    expect(await latecomer.tryAcquire('nobarge')).toBeNull();
    const served = await waiter;
    // The refused try left nothing behind: only the waiter's key.
    expect(await contenders(raw, 'nobarge/')).toHaveLength(1);
    await served.release();
    const later = await latecomer.tryAcquire('nobarge');
    expect(later).not.toBeNull();
    await later?.release();
  });

  it('two owners of one client are two contenders (<lease hex> and <lease hex>_1) and exclude each other', async () => {
    const shared = client();
    const first = await shared.acquire('owners', { owner: 'first' });
    const second = shared.acquire('owners', { owner: 'second', waitMs: 20_000 });
    await expect.poll(async () => (await contenders(raw, 'owners/')).length, { timeout: 15_000 }).toBe(2);
    const [mine, theirs] = await contenders(raw, 'owners/');
    expect(theirs?.key).toBe(`${mine?.key}_1`);
    await first.release();
    const next = await second;
    expect(next.fence).toBe(theirs?.revision);
    await next.release();
    expect(await contenders(raw, 'owners/')).toEqual([]);
  });
});
