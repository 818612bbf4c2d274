import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, LockTimeoutError } from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fenceKey } from '../src/index.js';
import { grantOf, Opened, request } from './support.js';

let server: ServerHandle;
const opened = new Opened();

beforeAll(async () => {
  server = await startRedis();
});
afterEach(() => opened.closeAll());
afterAll(() => server?.stop());

/** Calls of one command since the last CONFIG RESETSTAT, from INFO commandstats. */
async function calls(raw: ReturnType<Opened['raw']>, command: string): Promise<number> {
  const info = await raw.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

describe('redis fair mode', () => {
  it('keeps a plain token under the exact key, so a standard SET NX client is excluded', async () => {
    const backend = opened.backend(server.url, { mode: 'fair' });
    const raw = opened.raw(server.url);
    const grant = await grantOf(backend, request('fair:plain', 10_000));
    expect(await raw.get('fair:plain')).toBe(grant.token);
    expect(await raw.set('fair:plain', 'other', 'PX', 10_000, 'NX')).toBeNull();
    expect(Number(await raw.get(fenceKey('fair:plain')))).toBe(grant.fence);
    expect(await backend.release(grant)).toBe(true);
    expect(await raw.exists('fair:plain')).toBe(0);
  });

  it('an uncontended acquire and release publish nothing and start no subscriber', async () => {
    const backend = opened.backend(server.url, { mode: 'fair' });
    const raw = opened.raw(server.url);
    await raw.config('RESETSTAT');
    for (let i = 0; i < 20; i += 1) await backend.release(await grantOf(backend, request('fair:lean', 10_000)));
    expect(await calls(raw, 'publish')).toBe(0);
    expect(await calls(raw, 'subscribe')).toBe(0);
    // No queue: the scripts read the clock once, when the first grant seeds the key's fencing counter.
    expect(await calls(raw, 'time')).toBe(1);
  });

  it('after waiters that time out, abort and get served, only the fence is left on the server', async () => {
    const raw = opened.raw(server.url);
    const url = `${server.url}?mode=fair`;
    const [a, b, c] = [
      createLockClient({ url, prefix: 'left:' }),
      createLockClient({ url, prefix: 'left:' }),
      createLockClient({ url, prefix: 'left:' }),
    ];
    try {
      const held = await a.acquire('k');
      await expect(b.acquire('k', { waitMs: 200 })).rejects.toBeInstanceOf(LockTimeoutError);
      const controller = new AbortController();
      const aborted = b.acquire('k', { signal: controller.signal });
      const served = c.acquire('k');
      setTimeout(() => controller.abort(new Error('test abort')), 50);
      await expect(aborted).rejects.toThrow('test abort');
      await held.release();
      await (await served).release();
      expect((await raw.keys('left:*')).sort()).toEqual([]);
      expect(await raw.keys('{left:k}:*')).toEqual([fenceKey('left:k')]);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });
});
