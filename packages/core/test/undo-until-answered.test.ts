import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { type AcquireRequest, type Grant, guardCall, MemoryBackend, MemoryStore } from '../src/adapter/index.js';
import { deferred } from './helpers.js';

const call = { action: 'acquire', key: 'k', backend: 'test' };
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Rejects `within` if `promise` has not settled `ms` from now (a deadline, not a sleep). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('guardCall: the undo of an attempt given up on is retried until the server answers (issue 14)', () => {
  it('an undo that gets no answer is tried again, with growing pauses, until it answers', async () => {
    const tries: number[] = [];
    const answered = deferred();
    const undo = async (): Promise<boolean> => {
      tries.push(Date.now());
      if (tries.length < 4) throw new Error('no answer (frozen server)');
      answered.resolve();
      return true;
    };
    await expect(guardCall(() => Promise.reject(new Error('timed out')), { ...call, timeoutMs: 1_000, undo })).rejects.toThrow();
    await within(answered.promise, 5_000, 'the undo answered');
    expect(tries).toHaveLength(4);
    const pauses = tries.slice(1).map((at, i) => at - tries[i]!);
    // No hot loop: every retry waits (50 ms first, then doubling, jittered by at most 20%).
    // Lower bounds only (a loaded machine makes pauses longer, never shorter; 1 ms of timer slack).
    expect(pauses[0]!).toBeGreaterThanOrEqual(39);
    expect(pauses[1]!).toBeGreaterThanOrEqual(79);
    expect(pauses[2]!).toBeGreaterThanOrEqual(159);
  });

  it('"nothing found" after an unknown outcome is confirmed once more; a known late value is final at the first answer', async () => {
    const answers: unknown[] = [];
    const confirmed = deferred();
    const undo = async (late: string | undefined): Promise<boolean> => {
      answers.push(late);
      if (answers.length === 2) confirmed.resolve();
      return false;
    };
    await expect(guardCall(() => Promise.reject(new Error('reset')), { ...call, timeoutMs: 1_000, undo })).rejects.toThrow();
    await within(confirmed.promise, 3_000, 'the confirming undo');
    expect(answers).toEqual([undefined, undefined]);

    let land!: (value: string) => void;
    const knownUndo: unknown[] = [];
    const pending = guardCall(() => new Promise<string>((resolve) => (land = resolve)), {
      ...call,
      timeoutMs: 10,
      undo: async (late) => {
        knownUndo.push(late);
        return false;
      },
    });
    await expect(pending).rejects.toThrow();
    land('grant');
    await tick();
    expect(knownUndo).toEqual(['grant']);
  });

  it('stops at the lease ttl and at close(), and leaves no timer behind', async () => {
    let bounded = 0;
    const start = Date.now();
    await expect(
      guardCall(() => Promise.reject(new Error('reset')), {
        ...call,
        timeoutMs: 1_000,
        undoWithinMs: 200,
        undo: () => {
          bounded += 1;
          return Promise.reject(new Error('no answer'));
        },
      }),
    ).rejects.toThrow();
    const closed = new AbortController();
    let closedTries = 0;
    const firstTry = deferred();
    await expect(
      guardCall(() => Promise.reject(new Error('reset')), {
        ...call,
        timeoutMs: 1_000,
        closed: closed.signal,
        undo: () => {
          closedTries += 1;
          firstTry.resolve();
          return Promise.reject(new Error('no answer'));
        },
      }),
    ).rejects.toThrow();
    await firstTry.promise;
    await tick();
    const cleared = vi.spyOn(globalThis, 'clearTimeout');
    closed.abort(new Error('closing'));
    await tick();
    expect(cleared).toHaveBeenCalled(); // the pending pause (unref'd) is cleared at close, not left to run
    cleared.mockRestore();
    // The ttl bound: 50 + 100 ms of pauses fit in 200 ms, the next 200 ms pause does not.
    while (Date.now() - start < 400) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closedTries).toBe(1);
    expect(bounded).toBeGreaterThanOrEqual(2);
    expect(bounded).toBeLessThanOrEqual(4);
  });

  it('an adapter on a frozen server: the attempt runs on wake, the undo that timed out during the freeze is retried, no lease is left', async () => {
    const memory = new MemoryBackend(new MemoryStore());
    const request: AcquireRequest = { key: 'frozen', owner: 'a', ttlMs: 30_000, onLost: () => {} };
    let frozen = true;
    const onWake: (() => Promise<void>)[] = [];
    let attempted: Grant | undefined;
    let undoCalls = 0;
    const undone = deferred();
    const retriedWhileFrozen = deferred();
    // A frozen server: the attempt already sent runs when it wakes; a call sent during the freeze gets
    // no answer (the client times out and drops that socket), so only a retry after the wake can undo.
    const attempt = guardCall(
      () =>
        new Promise<never>((_, reject) => {
          onWake.push(async () => {
            const result = await memory.tryAcquire(request);
            if (result.acquired) attempted = result.grant;
          });
          setTimeout(() => reject(new Error('timed out')), 20); // the client library's own timeout
        }),
      {
        ...call,
        key: request.key,
        timeoutMs: 1_000,
        undoWithinMs: request.ttlMs,
        undo: async () => {
          undoCalls += 1;
          if (undoCalls === 2) retriedWhileFrozen.resolve();
          if (frozen) await new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), 20));
          const released = attempted !== undefined && (await memory.release(attempted));
          if (released) undone.resolve();
          return released;
        },
      },
    );
    await expect(attempt).rejects.toThrow(/timed out/);
    await within(retriedWhileFrozen.promise, 2_000, 'the undo retried during the freeze');
    frozen = false;
    for (const run of onWake) await run();
    expect(attempted).toBeDefined(); // the attempt ran on wake: a lease nobody holds, until the undo
    await within(undone.promise, 3_000, 'the retried undo removed the lease');
    expect((await memory.tryAcquire({ ...request, owner: 'b' })).acquired).toBe(true);
  });
});

describe('undos pending on one backend', () => {
  it('share one abort listener on its close signal, and all stop at close()', async () => {
    const closed = new AbortController();
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      const firstTries = Array.from({ length: 20 }, () => deferred());
      const tries = new Array<number>(20).fill(0);
      await Promise.all(
        firstTries.map((firstTry, i) =>
          expect(
            guardCall(() => Promise.reject(new Error('reset')), {
              ...call,
              timeoutMs: 1_000,
              closed: closed.signal,
              undo: () => {
                tries[i]! += 1;
                firstTry.resolve();
                return Promise.reject(new Error('no answer (frozen server)'));
              },
            }),
          ).rejects.toThrow(),
        ),
      );
      await Promise.all(firstTries.map((t) => t.promise));
      await tick();
      // 20 undos pausing before their retry: one listener of the kit's on the signal, not 20.
      expect(getEventListeners(closed.signal, 'abort')).toHaveLength(1);
      closed.abort(new Error('closing'));
      await tick();
      expect(tries.every((n) => n === 1)).toBe(true);
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
