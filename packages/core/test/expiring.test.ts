import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryBackend, memoryStore, type Grant } from '../src/adapter/index.js';
import { BackendUnavailableError, createLockClient, LockLostError, type LockClient, type LockEvents } from '../src/index.js';
import { uniqueName } from './helpers.js';

/** A memory backend whose renewals can fail at once or never answer (a server that stopped). */
class FlakyRenewals extends MemoryBackend {
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  override async renew(grant: Grant, ttlMs: number): Promise<boolean> {
    if (this.mode === 'fail') throw new Error('connection reset');
    if (this.mode === 'hang') return new Promise<boolean>(() => undefined);
    return super.renew(grant, ttlMs);
  }
}

const clients: LockClient[] = [];

function setup(defaults: { ttlMs?: number; expiringThresholdMs?: number } = {}): {
  backend: FlakyRenewals;
  locks: LockClient;
  seen: { name: 'expiring' | 'lost' | 'renewed'; at: number; payload: LockEvents['expiring'][0] | LockEvents['lost'][0] | undefined }[];
} {
  const backend = new FlakyRenewals(memoryStore(uniqueName('expiring')));
  const locks = createLockClient({ backend, defaults: { ttlMs: 3_000, ...defaults } });
  clients.push(locks);
  const seen: ReturnType<typeof setup>['seen'] = [];
  locks.on('expiring', (payload) => seen.push({ name: 'expiring', at: Date.now(), payload }));
  locks.on('lost', (payload) => seen.push({ name: 'lost', at: Date.now(), payload }));
  locks.on('renewed', () => seen.push({ name: 'renewed', at: Date.now(), payload: undefined }));
  return { backend, locks, seen };
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  vi.useRealTimers();
});

describe("'expiring'", () => {
  it('comes once, before lost, with time left, when renewals fail', async () => {
    const { backend, locks, seen } = setup();
    const lock = await locks.acquire('k');
    backend.mode = 'fail';
    await vi.advanceTimersByTimeAsync(3_500);
    const names = seen.map((event) => event.name);
    expect(names).toEqual(['expiring', 'lost']);
    const expiring = seen[0]!.payload as LockEvents['expiring'][0];
    expect(expiring.key).toBe('k');
    expect(expiring.owner).toBe(lock.owner);
    expect(expiring.remainingMs).toBeGreaterThan(0);
    expect(expiring.remainingMs).toBeLessThanOrEqual(1_000);
    expect(expiring.error).toBeInstanceOf(BackendUnavailableError);
    // Emitted while the lock was still held: the loss came later.
    expect(seen[1]!.at).toBeGreaterThan(seen[0]!.at);
  });

  it('comes before lost when the renewal never answers (a stopped server)', async () => {
    const { backend, locks, seen } = setup();
    await locks.acquire('k');
    backend.mode = 'hang';
    await vi.advanceTimersByTimeAsync(3_500);
    expect(seen.map((event) => event.name)).toEqual(['expiring', 'lost']);
    expect((seen[0]!.payload as LockEvents['expiring'][0]).remainingMs).toBeGreaterThan(0);
  });

  it('is not emitted while renewals go through', async () => {
    const { locks, seen } = setup();
    const lock = await locks.acquire('k');
    await vi.advanceTimersByTimeAsync(30_000);
    expect(seen.filter((event) => event.name !== 'renewed')).toEqual([]);
    expect(lock.expiringSignal.aborted).toBe(false);
  });

  it('a successful renewal ends the episode: a second jeopardy is reported again', async () => {
    const { backend, locks, seen } = setup();
    const lock = await locks.acquire('k');
    backend.mode = 'fail';
    await vi.advanceTimersByTimeAsync(2_200);
    expect(seen.map((event) => event.name)).toEqual(['expiring']);
    backend.mode = 'ok';
    await vi.advanceTimersByTimeAsync(400);
    expect(lock.held).toBe(true);
    backend.mode = 'fail';
    await vi.advanceTimersByTimeAsync(3_500);
    expect(seen.map((event) => event.name).filter((name) => name !== 'renewed')).toEqual(['expiring', 'expiring', 'lost']);
  });

  it('takes the threshold from the acquire', async () => {
    const { backend, locks, seen } = setup();
    await locks.acquire('k', { expiringThresholdMs: 1_800 });
    backend.mode = 'fail';
    // The renewal at 1 s fails; 1.8 s before the lease end (about 1.17 s) the lease is in jeopardy.
    await vi.advanceTimersByTimeAsync(1_300);
    expect(seen.map((event) => event.name)).toEqual(['expiring']);
    expect((seen[0]!.payload as LockEvents['expiring'][0]).remainingMs).toBeGreaterThan(1_000);
  });
});

describe('lock.expiringSignal', () => {
  it('aborts at the jeopardy, before the lock signal, with the renewal error', async () => {
    const { backend, locks } = setup();
    const lock = await locks.acquire('k');
    const expiring = lock.expiringSignal;
    backend.mode = 'fail';
    const expiringAt = new Promise<number>((resolve) => expiring.addEventListener('abort', () => resolve(Date.now())));
    const lostAt = new Promise<number>((resolve) => lock.signal.addEventListener('abort', () => resolve(Date.now())));
    await vi.advanceTimersByTimeAsync(3_500);
    expect(await expiringAt).toBeLessThan(await lostAt);
    expect(expiring.reason).toBeInstanceOf(BackendUnavailableError);
  });

  it('aborts at the loss when no jeopardy came first (a refused validate)', async () => {
    const { backend, locks } = setup();
    const lock = await locks.acquire('k', { ttlMs: 60_000 });
    backend.store.delete('k');
    expect(await lock.validate()).toBe(false);
    expect(lock.expiringSignal.aborted).toBe(true);
    expect(lock.expiringSignal.reason).toBeInstanceOf(LockLostError);
  });
});
