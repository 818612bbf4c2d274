import { startRedisMasters, type ServerHandle } from '@deadbolt/conformance/servers';
import { BackendUnavailableError } from '@deadbolt/core';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisBackend, type RedisBackend } from '../src/index.js';
import { grantOf, Opened, request, timed } from './support.js';

let masters: ServerHandle[];
const opened = new Opened();
const commandTimeoutMs = 1_000;
const slackMs = 2_500;

beforeAll(async () => {
  masters = await startRedisMasters(5);
});
afterEach(() => opened.closeAll());
afterAll(() => Promise.all((masters ?? []).map((master) => master.stop())));

function redlock(): RedisBackend {
  return track(createRedisBackend({ mode: 'redlock', nodes: masters.map((master) => `${master.host}:${master.port}`), commandTimeoutMs }));
}
const tracked: RedisBackend[] = [];
function track(backend: RedisBackend): RedisBackend {
  tracked.push(backend);
  return backend;
}
afterEach(async () => {
  await Promise.all(tracked.splice(0).map((backend) => backend.close()));
});

function raws(): Redis[] {
  return masters.map((master) => opened.raw(master.url));
}

async function values(key: string, servers: readonly ServerHandle[] = masters): Promise<(string | null)[]> {
  return Promise.all(servers.map((master) => opened.raw(master.url).get(key)));
}

describe('redis redlock mode (seed 004) on 5 masters', () => {
  it('takes the key with one token on every master, reports validity, gives no fencing token', async () => {
    const backend = redlock();
    expect(backend.capabilities.fencing).toBe(false);
    const before = Date.now();
    const grant = await grantOf(backend, request('rl:all', 10_000));
    expect(grant.fence).toBeUndefined();
    expect(grant.validUntil).toBeGreaterThan(before);
    expect(grant.validUntil).toBeLessThanOrEqual(Date.now() + 10_000 - 100 - 2);
    expect(await values('rl:all')).toEqual(masters.map(() => grant.token));
    expect(await backend.release(grant)).toBe(true);
    expect(await values('rl:all')).toEqual(masters.map(() => null));
  });

  it('when a majority is held by another token: busy with a retry hint, and nothing of ours is left behind', async () => {
    const backend = redlock();
    const nodes = raws();
    for (const node of nodes.slice(0, 3)) await node.set('rl:busy', 'someone-else', 'PX', 20_000);
    const result = await backend.tryAcquire(request('rl:busy', 10_000));
    expect(result.acquired).toBe(false);
    if (!result.acquired) expect(result.retryAfterMs).toBeGreaterThan(10_000);
    expect(await values('rl:busy')).toEqual(['someone-else', 'someone-else', 'someone-else', null, null]);
  });

  it('renew needs a majority, and moves validUntil forward', async () => {
    const backend = redlock();
    const nodes = raws();
    const grant = await grantOf(backend, request('rl:renew', 5_000));
    const firstValidUntil = grant.validUntil ?? 0;
    expect(await backend.renew(grant, 20_000)).toBe(true);
    expect(grant.validUntil).toBeGreaterThan(firstValidUntil);
    expect((await backend.renewMany([grant], [20_000]))[0]).toBe(true);
    for (const node of nodes.slice(0, 3)) await node.del('rl:renew');
    expect(await backend.renew(grant, 20_000)).toBe(false);
    expect((await backend.renewMany([grant], [20_000]))[0]).toBe(false);
  });

  it('with a minority of masters down, still acquires and releases', async () => {
    const backend = redlock();
    await grantOf(backend, request('rl:warm', 5_000));
    await Promise.all(masters.slice(0, 2).map((master) => master.down()));
    try {
      const { ms, value: result } = await timed(backend.tryAcquire(request('rl:minority', 10_000)));
      expect(result?.acquired).toBe(true);
      expect(ms).toBeLessThan(commandTimeoutMs + slackMs);
      if (!result?.acquired) return;
      expect(await values('rl:minority', masters.slice(2))).toEqual([result.grant.token, result.grant.token, result.grant.token]);
      expect(await backend.release(result.grant)).toBe(true);
    } finally {
      await Promise.all(masters.slice(0, 2).map((master) => master.up()));
    }
  });

  it('with a majority of masters down, fails with BackendUnavailableError within the deadline and releases what it took', async () => {
    const backend = redlock();
    await Promise.all(masters.slice(0, 3).map((master) => master.down()));
    try {
      const { ms, error } = await timed(backend.tryAcquire(request('rl:majority', 10_000)));
      expect(error).toBeInstanceOf(BackendUnavailableError);
      expect(ms).toBeLessThan(commandTimeoutMs + slackMs);
      expect(await values('rl:majority', masters.slice(3))).toEqual([null, null]);
    } finally {
      await Promise.all(masters.slice(0, 3).map((master) => master.up()));
    }
  });

  it('with a majority of masters frozen, fails within the per-node deadline and releases what it took', async () => {
    const backend = redlock();
    await grantOf(backend, request('rl:warm2', 5_000)); // connections open before the freeze
    await Promise.all(masters.slice(0, 3).map((master) => master.pause()));
    try {
      const { ms, error } = await timed(backend.tryAcquire(request('rl:frozen', 1_000)));
      expect(error).toBeInstanceOf(BackendUnavailableError);
      // Per-node deadline: a fifth of the 1 s ttl (200 ms), twice (acquire + undo).
      expect(ms).toBeLessThan(400 + slackMs);
      expect(await values('rl:frozen', masters.slice(3))).toEqual([null, null]);
    } finally {
      await Promise.all(masters.slice(0, 3).map((master) => master.resume()));
    }
  });
});
