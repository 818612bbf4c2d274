import { afterEach, describe, expect, it, vi } from 'vitest';
import { backoffDelayMs, defaultBackoff } from '../src/adapter/index.js';
import { createLockClient, type Lock, type LockClient } from '../src/index.js';
import { SpyBackend, uniqueName } from './helpers.js';

describe('backoffDelayMs: capped exponential backoff with equal jitter', () => {
  const policy = { baseMs: 10, capMs: 160 };

  it('the window doubles per attempt from baseMs and stops at capMs', () => {
    const upper = (attempt: number) => backoffDelayMs(attempt, policy, () => 1);
    expect([1, 2, 3, 4, 5, 6, 7, 20].map(upper)).toEqual([10, 20, 40, 80, 160, 160, 160, 160]);
  });

  it('the delay is drawn from the upper half of the window', () => {
    expect(backoffDelayMs(3, policy, () => 0)).toBe(20);
    expect(backoffDelayMs(3, policy, () => 0.5)).toBe(30);
    for (let i = 0; i < 200; i++) {
      const delay = backoffDelayMs(4, policy);
      expect(delay).toBeGreaterThanOrEqual(40);
      expect(delay).toBeLessThanOrEqual(80);
    }
  });

  it('jitter spreads waiters out', () => {
    const delays = new Set(Array.from({ length: 50 }, () => backoffDelayMs(6, defaultBackoff)));
    expect(delays.size).toBeGreaterThan(5);
  });

  it('survives absurd attempt numbers (no overflow, no NaN) and attempt 0', () => {
    expect(backoffDelayMs(10_000, policy, () => 1)).toBe(160);
    expect(backoffDelayMs(0, policy, () => 1)).toBe(10);
    expect(Number.isFinite(backoffDelayMs(Number.MAX_SAFE_INTEGER))).toBe(true);
  });

  it('the defaults are small and capped', () => {
    expect(defaultBackoff.baseMs).toBeGreaterThan(0);
    expect(defaultBackoff.capMs).toBeGreaterThanOrEqual(defaultBackoff.baseMs);
    expect(defaultBackoff.capMs).toBeLessThanOrEqual(1_000);
  });
});

describe('polling fallback for a backend without notifications', () => {
  const clients: LockClient[] = [];

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    vi.useRealTimers();
  });

  function pair(): { holder: LockClient; waiter: LockClient; spy: SpyBackend } {
    const name = uniqueName('poll');
    const spy = new SpyBackend(name, { notifications: false });
    const holder = createLockClient({ backend: new SpyBackend(name) });
    const waiter = createLockClient({ backend: spy });
    clients.push(holder, waiter);
    return { holder, waiter, spy };
  }

  it('retries with growing delays: a handful of attempts per second, not one per millisecond', async () => {
    vi.useFakeTimers();
    const { holder, waiter, spy } = pair();
    await holder.acquire('k');
    const pending = waiter.acquire('k', { waitMs: 2_000 }).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1_000);
    const inFirstSecond = spy.calls.tryAcquire;
    await vi.advanceTimersByTimeAsync(1_000);
    const inSecondSecond = spy.calls.tryAcquire - inFirstSecond;
    expect(await pending).toMatchObject({ name: 'LockTimeoutError' });
    expect(spy.calls.waitForChange).toBe(0);
    expect(inFirstSecond).toBeGreaterThan(3);
    expect(inFirstSecond).toBeLessThan(40);
    // At the cap: no more than one attempt per capMs/2.
    expect(inSecondSecond).toBeLessThanOrEqual(Math.ceil(1_000 / (defaultBackoff.capMs / 2)) + 1);
  });

  it('a polling waiter gets the lock soon after a release (within one capped delay)', async () => {
    vi.useFakeTimers();
    const { holder, waiter } = pair();
    const held = await holder.acquire('k');
    let lock: Lock | undefined;
    const pending = waiter.acquire('k', { waitMs: 10_000 }).then((l) => (lock = l));
    await vi.advanceTimersByTimeAsync(3_000);
    await held.release();
    await vi.advanceTimersByTimeAsync(defaultBackoff.capMs);
    await pending;
    expect(lock?.held).toBe(true);
  });

  it('never sleeps past the holder lease (the retryAfterMs hint)', async () => {
    vi.useFakeTimers();
    const { holder, waiter } = pair();
    // Backoff alone (rounded delays 3-5, 5-10, 10-20, 20-40, 40-80, 80-160 ms) retries at <= 155 ms or
    // >= 158 ms, whatever the jitter; a lease ending at 156 ms is taken at 157 ms only thanks to the hint.
    await holder.acquire('k', { ttlMs: 156, autoRenew: false });
    let lock: Lock | undefined;
    const pending = waiter.acquire('k', { waitMs: 10_000 }).then((l) => (lock = l));
    await vi.advanceTimersByTimeAsync(157);
    expect(lock?.held).toBe(true);
    await pending;
  });
});
