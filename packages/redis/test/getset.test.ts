import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { grantOf, Opened, request } from './support.js';

let server: ServerHandle;
const opened = new Opened();

beforeAll(async () => {
  server = await startRedis();
});
afterEach(() => opened.closeAll());
afterAll(() => server?.stop());

describe('redis getset mode (seed 003)', () => {
  it('declares its clock dependence and stores "<expiresAt>:<token>" by the client clock', async () => {
    const fixedNow = 1_700_000_000_000;
    const backend = opened.backend(server.url, { mode: 'getset', now: () => fixedNow });
    const raw = opened.raw(server.url);
    expect(backend.capabilities.clock).toBe('client');
    expect(backend.capabilities.fencing).toBe(false);
    const grant = await grantOf(backend, request('gs:format', 10_000));
    expect(await raw.get('gs:format')).toBe(`${fixedNow + 10_000}:${grant.token}`);
  });

  it('without skew, a live lock is not taken over; after its expiry (by the clock) it is', async () => {
    let now = Date.now();
    const a = opened.backend(server.url, { mode: 'getset', now: () => now });
    const b = opened.backend(server.url, { mode: 'getset', now: () => now });
    const grantA = await grantOf(a, request('gs:expiry', 10_000, 'a'));
    const busy = await b.tryAcquire(request('gs:expiry', 10_000, 'b'));
    expect(busy.acquired).toBe(false);
    if (!busy.acquired) expect(busy.retryAfterMs).toBe(10_000);
    now += 10_001; // both clocks move past the stored expiry
    const grantB = await grantOf(b, request('gs:expiry', 10_000, 'b'));
    expect(await a.release(grantA)).toBe(false);
    expect(await a.renew(grantA, 10_000)).toBe(false);
    expect(await b.release(grantB)).toBe(true);
  });

  it('a client whose clock runs ahead takes a lock that has not expired (the documented weakness); the owner token still protects the holder', async () => {
    const a = opened.backend(server.url, { mode: 'getset' });
    const ahead = opened.backend(server.url, { mode: 'getset', now: () => Date.now() + 60_000 });
    const raw = opened.raw(server.url);
    const grantA = await grantOf(a, request('gs:skew', 30_000, 'a'));
    // 30 s left by the server's and A's clock, yet the fast client judges it expired and wins.
    const stolen = await ahead.tryAcquire(request('gs:skew', 30_000, 'fast'));
    expect(stolen.acquired).toBe(true);
    if (!stolen.acquired) return;
    // A's release and renew cannot remove or extend the new owner's lock.
    expect(await a.renew(grantA, 30_000)).toBe(false);
    expect(await a.release(grantA)).toBe(false);
    expect(String(await raw.get('gs:skew'))).toMatch(new RegExp(`:${stolen.grant.token}$`));
    expect(await ahead.release(stolen.grant)).toBe(true);
    expect(await raw.exists('gs:skew')).toBe(0);
  });

  it('a release by a non-owner never deletes; renew writes a later expiry for the owner', async () => {
    let now = Date.now();
    const backend = opened.backend(server.url, { mode: 'getset', now: () => now });
    const raw = opened.raw(server.url);
    const grant = await grantOf(backend, request('gs:renew', 1_000, 'a'));
    expect(await backend.release({ ...grant, token: 'not-the-token' })).toBe(false);
    now += 500;
    expect(await backend.renew(grant, 1_000)).toBe(true);
    expect(await raw.get('gs:renew')).toBe(`${now + 1_000}:${grant.token}`);
  });
});
