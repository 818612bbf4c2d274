import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeadlineExceededError, DeadlineWheel, guardCall } from '../src/adapter/index.js';

describe('DeadlineWheel (many call deadlines on one timer)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('fires never early and at most 1/64 of the deadline late', async () => {
    vi.useFakeTimers();
    const wheel = new DeadlineWheel();
    const fired: number[] = [];
    const startedAt = Date.now();
    wheel.watch(6_400, () => fired.push(Date.now() - startedAt));
    wheel.watch(50, () => fired.push(Date.now() - startedAt));
    await vi.advanceTimersByTimeAsync(49);
    expect(fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(2);
    expect(fired).toEqual([50]);
    await vi.advanceTimersByTimeAsync(6_400 - 52);
    expect(fired).toEqual([50]);
    await vi.advanceTimersByTimeAsync(100);
    expect(fired).toHaveLength(2);
    expect(fired[1]).toBeGreaterThanOrEqual(6_400);
    expect(fired[1]).toBeLessThanOrEqual(6_400 + 100);
    wheel.stop();
  });

  it("a deadline past setTimeout's 2^31 - 1 ms ceiling does not fire at once", async () => {
    vi.useFakeTimers();
    const wheel = new DeadlineWheel();
    let fired = false;
    wheel.watch(2 ** 31 + 5_000, () => (fired = true));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(fired).toBe(false);
    wheel.stop();
  });

  it('a cancelled watch never fires, and an idle wheel keeps no process alive', async () => {
    const wheel = new DeadlineWheel();
    const timeouts = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timeouts();
    let fired = false;
    const watch = wheel.watch(30, () => (fired = true));
    expect(timeouts()).toBe(before + 1);
    watch.cancel();
    watch.cancel();
    expect(timeouts()).toBe(before); // still armed, but unref'd
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(fired).toBe(false);
    wheel.stop();
  });

  it('guardCall on a wheel: a call that never answers gets its typed deadline error', async () => {
    vi.useFakeTimers();
    const wheel = new DeadlineWheel();
    const pending = guardCall(() => new Promise<never>(() => undefined), {
      action: 'acquire',
      key: 'k',
      backend: 'test',
      timeoutMs: 1_000,
      deadlines: wheel,
    }).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1_000 + 1_000 / 64);
    const error = (await pending) as { cause?: unknown };
    expect(error.cause).toBeInstanceOf(DeadlineExceededError);
    wheel.stop();
  });
});
