import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeadlineExceededError, withDeadline } from '../src/adapter/index.js';

describe('withDeadline (the per-call bound adapters share)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('returns what the operation returns and leaves no timer behind', async () => {
    vi.useFakeTimers();
    await expect(withDeadline(Promise.resolve('ok'), 1000)).resolves.toBe('ok');
    expect(vi.getTimerCount()).toBe(0);
  });

  it("passes the operation's own error through and clears the timer", async () => {
    vi.useFakeTimers();
    await expect(withDeadline(Promise.reject(new Error('refused')), 1000)).rejects.toThrow('refused');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('rejects with DeadlineExceededError naming the bound when the operation never settles', async () => {
    vi.useFakeTimers();
    const pending = withDeadline(new Promise<never>(() => undefined), 250);
    const outcome = expect(pending).rejects.toSatisfy(
      (e: unknown) => e instanceof DeadlineExceededError && e.ms === 250 && /250 ms/.test(e.message),
    );
    await vi.advanceTimersByTimeAsync(249);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await outcome;
    expect(vi.getTimerCount()).toBe(0);
  });
});
