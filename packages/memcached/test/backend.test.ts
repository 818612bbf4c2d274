import { BackendUnavailableError } from '@deadbolt/core';
import { type Grant } from '@deadbolt/core/adapter';
import type memjs from 'memjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeKey, getWithCas, type MemcachedBackend } from '../src/index.js';
import { createMemcachedBackend } from '../src/index.js';
import { firstTrueWhileCalling } from '@deadbolt/conformance';
import { startProxy } from '@deadbolt/conformance/servers';
import { startSlowLink } from './slow-link.js';
import { backendFor, rawClient, request, startMemcached, type ServerHandle } from './support.js';

async function grantOf(backend: MemcachedBackend, key: string, owner = 'owner', ttlMs = 10_000): Promise<Grant> {
  const result = await backend.tryAcquire(request(key, owner, ttlMs));
  if (!result.acquired) throw new Error(`expected to acquire ${key}`);
  return result.grant;
}

describe('memcached backend', () => {
  let server: ServerHandle;
  let a: MemcachedBackend;
  let b: MemcachedBackend;
  let raw: memjs.Client;
  beforeAll(async () => {
    server = await startMemcached();
    a = backendFor(server);
    b = backendFor(server);
    raw = rawClient(server);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    raw?.close();
    await server?.stop();
  });

  it('acquire is exclusive; release frees; double release is false', async () => {
    const grant = await grantOf(a, 'b:excl');
    expect((await b.tryAcquire(request('b:excl', 'other'))).acquired).toBe(false);
    expect(await a.release(grant)).toBe(true);
    expect(await a.release(grant)).toBe(false);
    const next = await grantOf(b, 'b:excl', 'other');
    expect(await b.release(next)).toBe(true);
  });

  it('race: an old owner releasing while its lease expires and a new owner acquires never deletes the new lock (200 iterations)', async () => {
    // The old owner talks through a 5 ms one-way link, so the expiry and the new owner's ADD can land
    // between its GET and its DELETE: the window a release without CAS gets wrong.
    const link = await startSlowLink(server, 5);
    const slow = createMemcachedBackend({ servers: [{ host: '127.0.0.1', port: link.port }], timeoutMs: 5_000 });
    let deletedNew = 0;
    let oldReleaseWon = 0;
    try {
      for (let i = 0; i < 200; i += 1) {
        const key = `b:race:${i}`;
        const old = await grantOf(slow, key, 'old');
        const [released, attempt] = await Promise.all([
          slow.release(old),
          (async () => {
            // Expiry (forced by deleting the key) at a spread of moments across the release's two
            // round trips, then the new owner's ADD.
            await new Promise((r) => setTimeout(r, i % 15));
            await raw.delete(encodeKey(key));
            return b.tryAcquire(request(key, 'new'));
          })(),
        ]);
        if (released) oldReleaseWon += 1;
        expect(attempt.acquired).toBe(true);
        const held = await getWithCas(raw, encodeKey(key));
        if (held === undefined || (attempt.acquired && held.value.toString() !== attempt.grant.token)) deletedNew += 1;
        if (attempt.acquired) await b.release(attempt.grant);
      }
    } finally {
      await slow.close();
      await link.close();
    }
    // Both outcomes of the race are legal; the split shows the race was real.
    console.info(`race: old release won ${oldReleaseWon}/200, expiry won ${200 - oldReleaseWon}/200, new lock deleted ${deletedNew} times`);
    expect(deletedNew).toBe(0);
  });

  it('race: an old owner renewing while its lease expires never overwrites the new owner lock (100 iterations)', async () => {
    const link = await startSlowLink(server, 5);
    const slow = createMemcachedBackend({ servers: [{ host: '127.0.0.1', port: link.port }], timeoutMs: 5_000 });
    let overwritten = 0;
    try {
      for (let i = 0; i < 100; i += 1) {
        const key = `b:renew-race:${i}`;
        const old = await grantOf(slow, key, 'old');
        const [, attempt] = await Promise.all([
          slow.renew(old, 10_000),
          (async () => {
            await new Promise((r) => setTimeout(r, i % 15));
            await raw.delete(encodeKey(key));
            return b.tryAcquire(request(key, 'new'));
          })(),
        ]);
        // The new owner's ADD can only fail if the old renew re-created the key: that is a bug too.
        expect(attempt.acquired).toBe(true);
        const held = await getWithCas(raw, encodeKey(key));
        if (!attempt.acquired || held?.value.toString() !== attempt.grant.token) overwritten += 1;
        if (attempt.acquired) await b.release(attempt.grant);
      }
    } finally {
      await slow.close();
      await link.close();
    }
    expect(overwritten).toBe(0);
  });

  it('race: release of a lock replaced between GET and DELETE is refused by the CAS', async () => {
    // Interleave by hand: the old owner read (value, cas) while it still held the lock; then the
    // lock expired and a new owner took it; the old owner's DELETE with the old CAS must fail.
    const key = encodeKey('b:interleave');
    const old = await grantOf(a, 'b:interleave', 'old');
    const seen = await getWithCas(raw, key);
    expect(seen?.value.toString()).toBe(old.token);
    await raw.delete(key);
    const fresh = await grantOf(b, 'b:interleave', 'new');
    const { deleteIfCas } = await import('../src/index.js');
    expect(await deleteIfCas(raw, key, seen!.cas)).toBe(false);
    expect((await getWithCas(raw, key))?.value.toString()).toBe(fresh.token);
    expect(await b.release(fresh)).toBe(true);
  });

  it('renew keeps our lock; renew and release of a lock someone else now holds return false', async () => {
    const old = await grantOf(a, 'b:renew', 'old');
    expect(await a.renew(old, 10_000)).toBe(true);
    await raw.delete(encodeKey('b:renew'));
    const fresh = await grantOf(b, 'b:renew', 'new');
    expect(await a.renew(old, 10_000)).toBe(false);
    expect(await a.release(old)).toBe(false);
    expect((await getWithCas(raw, encodeKey('b:renew')))?.value.toString()).toBe(fresh.token);
    expect(await b.renew(fresh, 10_000)).toBe(true);
    expect(await b.release(fresh)).toBe(true);
  });

  it('a renewed lease moves the expiry: 2 s lease renewed to 30 s outlives the first lease', async () => {
    // 2 s, not 1 s: memcached keeps it for 3 of its once-a-second clock ticks (expiry.ts), at least
    // 2 s; a 1 s lease could end after just over 1 s, so a stall of this process that long between
    // the acquire and the renew let the renew find the lease gone (a 2.1 s busy-wait there fails the
    // 1 s lease, not the 2 s one).
    const grant = await grantOf(a, 'b:extend', 'owner', 2_000);
    expect(await a.renew(grant, 30_000)).toBe(true);
    // Wait (on a deadline, not as synchronisation of our own operations) past the first lease's
    // longest life on the server (3 s).
    await new Promise((r) => setTimeout(r, 3_100));
    expect((await b.tryAcquire(request('b:extend', 'other'))).acquired).toBe(false);
    expect(await a.release(grant)).toBe(true);
  });

  it('keys with spaces, unicode, % and long keys work and stay distinct', async () => {
    const long = 'x'.repeat(1000);
    const keys = [
      'with space',
      'with%20space',
      'with%2520space',
      'ünïcödé 🔒',
      'tab\tnew\nline',
      '{braces}/slash',
      long,
      `${long}y`,
      '%H' + 'a'.repeat(43),
    ];
    const encoded = new Set(keys.map(encodeKey));
    expect(encoded.size).toBe(keys.length);
    for (const e of encoded) {
      expect(Buffer.byteLength(e)).toBeLessThanOrEqual(250);
      expect(e).toMatch(/^[\x21-\x7e]+$/);
    }
    const grants = [];
    for (const key of keys) grants.push(await grantOf(a, key));
    for (const key of keys) expect((await b.tryAcquire(request(key, 'other'))).acquired).toBe(false);
    for (const grant of grants) expect(await a.release(grant)).toBe(true);
  });
});

describe('memcached backend under faults', () => {
  it('server restart loses locks: renew returns false', async () => {
    const server = await startMemcached();
    const backend = backendFor(server);
    try {
      const grant = await grantOf(backend, 'f:restart');
      await server.restart();
      // The first call after a restart may hit the dead socket; the lock itself is gone either way.
      const renewed = await backend
        .renew(grant, 10_000)
        .catch((error: unknown) => (error instanceof BackendUnavailableError ? 'unavailable' : error));
      if (renewed === 'unavailable') expect(await backend.renew(grant, 10_000)).toBe(false);
      else expect(renewed).toBe(false);
      // The backend reconnects by itself: the key is free again on the restarted server.
      const again = await backend.tryAcquire(request('f:restart', 'next'));
      expect(again.acquired).toBe(true);
    } finally {
      await backend.close();
      await server.stop();
    }
  });

  it('a connection gone silent is dropped at the first deadline, though calls keep coming faster than the timeout', async () => {
    const server = await startMemcached();
    const link = await startProxy(server.host, server.port);
    const timeoutMs = 400;
    const backend = createMemcachedBackend({ servers: [{ host: '127.0.0.1', port: link.port }], timeoutMs });
    try {
      const grant = await grantOf(backend, 'f:silent');
      link.strand();
      // A renewal every 100 ms: memjs's own timeout is the socket's idle timer, which each of them
      // restarted, so none was ever answered again. Now the first deadline drops the connection.
      const answeredAfterMs = await firstTrueWhileCalling(() => backend.renew(grant, 10_000), 100, 10 * timeoutMs);
      expect(answeredAfterMs, 'no renewal was answered after the connection went silent').toBeDefined();
      expect(answeredAfterMs!).toBeLessThan(3 * timeoutMs);
      // The stranded connection (never closed by the link) and the new one.
      expect(link.connections).toBe(2);
    } finally {
      await backend.close();
      await link.close();
      await server.stop();
    }
  });

  it('dead server: BackendUnavailableError naming key and backend within the deadline', async () => {
    const server = await startMemcached();
    const backend = backendFor(server, 1_000);
    try {
      await server.down();
      const started = Date.now();
      const error = await backend.tryAcquire(request('f:dead')).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendUnavailableError);
      expect((error as BackendUnavailableError).key).toBe('f:dead');
      expect((error as BackendUnavailableError).backend).toBe('memcached');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await backend.close();
      await server.stop();
    }
  });

  it('paused server: BackendUnavailableError within the deadline, no hang', async () => {
    const server = await startMemcached();
    const backend = backendFor(server, 1_000);
    try {
      const grant = await grantOf(backend, 'f:paused');
      await server.pause();
      const started = Date.now();
      const error = await backend.renew(grant, 10_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendUnavailableError);
      expect(Date.now() - started).toBeLessThan(5_000);
      await server.resume();
    } finally {
      await backend.close();
      await server.stop();
    }
  });
});
