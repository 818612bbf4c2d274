import { afterEach, describe, expect, it } from 'vitest';
import type { AcquireRequest, Grant } from '../src/adapter/index.js';
import { createLockClient, type LockClient } from '../src/index.js';
import { SpyBackend, uniqueName } from './helpers.js';

/**
 * A backend with native waiting (as PostgreSQL's blocking advisory lock or ZooKeeper's watch),
 * built on the memory backend: it reports queueing through request.onContended.
 */
class QueueingBackend extends SpyBackend {
  nativeAcquires = 0;

  constructor() {
    super(uniqueName('native'));
  }

  async acquire(request: AcquireRequest, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    this.nativeAcquires += 1;
    for (;;) {
      const result = await this.inner.tryAcquire(request);
      if (result.acquired) return result.grant;
      // Twice on purpose: core must report one 'contended' per acquire, however often it is told.
      request.onContended?.();
      request.onContended?.();
      const remaining = deadline - Date.now();
      if (remaining <= 0 || signal.aborted) return undefined;
      await this.inner.waitForChange(request.key, remaining, signal).catch(() => undefined);
    }
  }
}

const clients: LockClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function clientOn(backend: QueueingBackend): LockClient {
  const created = createLockClient({ backend });
  clients.push(created);
  return created;
}

describe('native acquire', () => {
  it('a native acquire makes its own first attempt: a caller that may wait gets no plain attempt first', async () => {
    const backend = new QueueingBackend();
    const lock = await clientOn(backend).acquire('k', { waitMs: 1000 });
    expect(backend.calls.tryAcquire).toBe(0);
    expect(backend.nativeAcquires).toBe(1);
    await lock.release();
  });

  it('a caller that may not wait (tryAcquire, or waitMs 0) gets one plain attempt, never the native wait', async () => {
    const backend = new QueueingBackend();
    const client = clientOn(backend);
    const lock = await client.tryAcquire('k');
    expect(lock).not.toBeNull();
    const zero = await client.acquire('other', { waitMs: 0 });
    expect(backend.calls.tryAcquire).toBe(2);
    expect(backend.nativeAcquires).toBe(0);
    await lock?.release();
    await zero.release();
  });

  it("the native wait emits 'contended' exactly once, then hands the lock over on release", async () => {
    const backend = new QueueingBackend();
    const holder = await clientOn(backend).acquire('k', { waitMs: 1000 });
    const waiterClient = clientOn(backend);
    const contended: unknown[] = [];
    waiterClient.on('contended', (event) => contended.push(event));
    const waiting = waiterClient.acquire('k', { waitMs: 5000 });
    await new Promise<void>((resolve) => waiterClient.once('contended', () => resolve()));
    await holder.release();
    const lock = await waiting;
    expect(contended).toEqual([expect.objectContaining({ key: 'k', attempt: 1 })]);
    expect(backend.calls.tryAcquire).toBe(0);
    await lock.release();
  });
});
