import { inspect } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import {
  BackendUnavailableError,
  ClientClosedError,
  guardCall,
  InvalidArgumentError,
  KeyedWaiters,
  LockLostError,
} from '../src/adapter/index.js';
import { createLockClient } from '../src/index.js';
import { freshMemory } from './helpers.js';

const call = { action: 'acquire', key: 'k', backend: 'test' };

describe('guardCall', () => {
  it('maps a failure to BackendUnavailableError naming action, key and backend, and undoes with an unknown outcome', async () => {
    const undo = vi.fn();
    const error = await guardCall(() => Promise.reject(new Error('reset')), { ...call, timeoutMs: 1_000, undo }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as Error).message).toContain('during acquire: reset');
    expect((error as BackendUnavailableError).key).toBe('k');
    expect(undo).toHaveBeenCalledWith(undefined);
  });

  it('gives up at the deadline, then undoes the value that lands late', async () => {
    let land!: (value: string) => void;
    const undone: unknown[] = [];
    const pending = guardCall(() => new Promise<string>((resolve) => (land = resolve)), {
      ...call,
      timeoutMs: 20,
      undo: (late) => void undone.push(late),
    });
    await expect(pending).rejects.toBeInstanceOf(BackendUnavailableError);
    land('grant');
    await new Promise((resolve) => setImmediate(resolve));
    expect(undone).toEqual(['grant']);
  });

  it('tells onDeadline once the deadline has failed the call, and never when an answer, a failure or an abort came first', async () => {
    const order: string[] = [];
    const silent = guardCall(() => new Promise<never>(() => undefined), {
      ...call,
      timeoutMs: 20,
      onDeadline: () => void order.push('onDeadline'),
    }).catch(() => void order.push('rejected'));
    await silent;
    await new Promise((resolve) => setTimeout(resolve, 30));
    // The caller's rejection handler runs in a microtask after onDeadline; the call had failed first.
    expect(order).toEqual(['onDeadline', 'rejected']);
    const onDeadline = vi.fn();
    await guardCall(() => Promise.resolve(1), { ...call, timeoutMs: 20, onDeadline });
    await guardCall(() => Promise.reject(new Error('reset')), { ...call, timeoutMs: 20, onDeadline }).catch(() => undefined);
    const controller = new AbortController();
    const aborted = guardCall(() => new Promise<never>(() => undefined), { ...call, timeoutMs: 20, signal: controller.signal, onDeadline });
    controller.abort(new Error('closing'));
    await aborted.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(onDeadline).not.toHaveBeenCalled();
  });

  it('an abort gives up at once with its (typed) reason and clears the timer; a value in time is not undone', async () => {
    const controller = new AbortController();
    const undo = vi.fn();
    const pending = guardCall(() => new Promise<never>(() => undefined), { ...call, timeoutMs: 60_000, signal: controller.signal, undo });
    const reason = new ClientClosedError({ backend: 'test' });
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    const other = new AbortController();
    const plain = guardCall(() => new Promise<never>(() => undefined), { ...call, timeoutMs: 60_000, signal: other.signal });
    other.abort(new Error('closing'));
    await expect(plain).rejects.toBeInstanceOf(BackendUnavailableError);
    expect(process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length).toBeLessThan(5);
    await expect(guardCall(() => Promise.resolve(1), { ...call, timeoutMs: 1_000, undo })).resolves.toBe(1);
    expect(undo).not.toHaveBeenCalled();
  });

  it('never repeats a prefix when it wraps an error that already is one', async () => {
    const inner = new BackendUnavailableError('acquire', { key: 'k', backend: 'x', cause: new Error('no answer') });
    const outer = new BackendUnavailableError('acquire', { key: 'k', backend: 'x', cause: inner });
    expect(outer.message.match(/backend unavailable/g)).toHaveLength(1);
    const lost = new LockLostError('lock lost: session expired', { key: 'k', cause: new LockLostError('session expired') });
    expect(lost.message.match(/lock lost/g)).toHaveLength(1);
  });
});

describe('KeyedWaiters', () => {
  it('wakes one waiter per wakeOne, in arrival order, skipping those that left', async () => {
    const waiters = new KeyedWaiters();
    const order: number[] = [];
    const gone = new AbortController();
    const waits = [0, 1, 2].map((i) =>
      waiters.wait('k', 10_000, i === 1 ? gone.signal : undefined).then(
        () => order.push(i),
        () => order.push(-i),
      ),
    );
    gone.abort(new Error('left'));
    waiters.wakeOne('k');
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([-1, 0]);
    waiters.wakeOne('k');
    await Promise.all(waits);
    expect(order).toEqual([-1, 0, 2]);
    expect(waiters.size).toBe(0);
  });

  it('tells when a key gets its first waiter and loses its last', async () => {
    const events: string[] = [];
    const waiters = new KeyedWaiters({ onFirst: (key) => events.push(`first ${key}`), onEmpty: (key) => events.push(`empty ${key}`) });
    const a = waiters.wait('k', 10_000);
    const b = waiters.wait('k', 10_000);
    waiters.wakeAll('k');
    await Promise.all([a, b]);
    expect(events).toEqual(['first k', 'empty k']);
  });
});

describe('reliability fixes in core (issue 14)', () => {
  it('2,000 waiters on one memory key are all served, one at a time (the suite runs the 10,000 of issue 14)', async () => {
    const { url } = freshMemory('crowd');
    const client = createLockClient(url);
    let served = 0;
    await Promise.all(
      Array.from({ length: 2_000 }, () =>
        client.withLock(
          'k',
          () => {
            served += 1;
          },
          { waitMs: 120_000, owner: undefined },
        ),
      ),
    );
    expect(served).toBe(2_000);
    await client.close();
  }, 60_000);

  it('held and signal read the lease deadline: after a pause past the ttl they say lost at once', async () => {
    const { url } = freshMemory('paused');
    const client = createLockClient(url);
    const lock = await client.acquire('k', { ttlMs: 200, autoRenew: false });
    expect(lock.held).toBe(true);
    const pauseUntil = Date.now() + 250;
    while (Date.now() < pauseUntil) {
      // a blocked event loop: no timer can run
    }
    expect(lock.held).toBe(false);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    await lock.release();
    await client.close();
  });

  it('NUL, lone surrogates and a 1 MB owner are InvalidArgumentError before any I/O', async () => {
    const { url, store } = freshMemory('bad-text');
    const client = createLockClient(url);
    const before = store.operations;
    for (const key of ['a\u0000b', '\ud800', '\udbff', 'x\udc00']) {
      await expect(client.acquire(key)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    await expect(client.acquire('k', { owner: 'o'.repeat(1 << 20) })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(client.acquire('k', { owner: '\ud800' })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(() => createLockClient({ url, prefix: 'p\u0000' })).toThrow(InvalidArgumentError);
    expect(store.operations).toBe(before);
    const replacement = await client.acquire('\ufffd');
    await replacement.release();
    await client.close();
  });

  it('a client and a lock print only what is safe (inspect at any depth with showHidden, JSON, String)', async () => {
    const { url } = freshMemory('print');
    const client = createLockClient(url);
    const lock = await client.acquire('k');
    for (const value of [client, lock]) {
      const printed = [inspect(value, { depth: Infinity, showHidden: true }), JSON.stringify(value), String(value)];
      for (const text of printed) expect(text).not.toMatch(/renewer|backendLoading|leases|store/);
    }
    expect(inspect(lock)).toContain("key: 'k'");
    await lock.release();
    await client.close();
  });
});
