import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { releaseChannel } from '../src/index.js';
import { grantOf, Opened, request, timed } from './support.js';

let server: ServerHandle;
const opened = new Opened();

beforeAll(async () => {
  server = await startRedis();
});
afterEach(() => opened.closeAll());
afterAll(() => server?.stop());

async function subscriberCount(raw: ReturnType<Opened['raw']>, channel: string): Promise<number> {
  const reply = (await raw.pubsub('NUMSUB', channel)) as [string, number];
  return Number(reply[1]);
}

/** Waits until the server reports `count` subscribers on `channel` (a condition, bounded by a deadline). */
async function untilSubscribers(raw: ReturnType<Opened['raw']>, channel: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await subscriberCount(raw, channel)) !== count) {
    if (Date.now() > deadline) throw new Error(`${channel} never reached ${count} subscriber(s)`);
    await raw.ping();
  }
}

describe.each(['setnx', 'hash-reentrant'] as const)('redis %s release notifications', (mode) => {
  it('a release wakes a waiter long before its maximum wait, then the channel is unsubscribed', async () => {
    const backend = opened.backend(server.url, { mode });
    const raw = opened.raw(server.url);
    const key = `wake:${mode}`;
    const grant = await grantOf(backend, request(key, 30_000, 'holder'));
    const waiting = timed(backend.waitForChange!(key, 20_000, new AbortController().signal));
    await untilSubscribers(raw, releaseChannel(key), 1);
    const releasedAt = performance.now();
    expect(await backend.release(grant)).toBe(true);
    const { ms, error } = await waiting;
    expect(error).toBeUndefined();
    // Woken by the message: far below the 20 s maximum (and below core's 2 s polling fallback).
    expect(performance.now() - releasedAt).toBeLessThan(1_500);
    expect(ms).toBeLessThan(20_000);
    await untilSubscribers(raw, releaseChannel(key), 0);
  });

  it('resolves at once when the lock was released before the subscription was live', async () => {
    const backend = opened.backend(server.url, { mode });
    const { ms } = await timed(backend.waitForChange!(`gone:${mode}`, 20_000, new AbortController().signal));
    expect(ms).toBeLessThan(5_000);
  });

  it('one shared subscriber connection serves waiters on many keys; abort rejects and unsubscribes', async () => {
    const backend = opened.backend(server.url, { mode });
    const raw = opened.raw(server.url);
    const keys = Array.from({ length: 5 }, (_, index) => `many:${mode}:${index}`);
    for (const key of keys) await grantOf(backend, request(key, 30_000, 'holder'));
    const controller = new AbortController();
    const waits = keys.map((key) => timed(backend.waitForChange!(key, 20_000, controller.signal)));
    for (const key of keys) await untilSubscribers(raw, releaseChannel(key), 1);
    const clients = String(await raw.client('LIST'))
      .trim()
      .split('\n');
    // Our raw connection, the backend's command connection, and ONE subscriber.
    expect(clients).toHaveLength(3);
    controller.abort(new Error('stop waiting'));
    for (const wait of await Promise.all(waits)) expect((wait.error as Error).message).toBe('stop waiting');
    for (const key of keys) await untilSubscribers(raw, releaseChannel(key), 0);
  });

  it('close() quits every connection, the subscriber included', async () => {
    const backend = opened.backend(server.url, { mode });
    const raw = opened.raw(server.url);
    const grant = await grantOf(backend, request(`close:${mode}`, 30_000, 'holder'));
    const waiting = backend.waitForChange!(grant.key, 20_000, new AbortController().signal);
    await untilSubscribers(raw, releaseChannel(grant.key), 1);
    await backend.close();
    await waiting; // close wakes waiters
    const deadline = Date.now() + 10_000;
    while (
      String(await raw.client('LIST'))
        .trim()
        .split('\n').length !== 1
    ) {
      if (Date.now() > deadline) throw new Error('connections left open after close()');
      await raw.ping();
    }
  });
});
