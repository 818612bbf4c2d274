import { afterEach, describe, expect, it } from 'vitest';
import { createLockClient, LockLostError, type LockClient } from '../src/index.js';
import { freshMemory } from './helpers.js';

/**
 * A holder whose event loop is blocked past its lease (a GC pause, a long synchronous loop): no
 * timer can run meanwhile, so what it reads first on waking must already say the lock is gone.
 * Every object a caller may have saved is read straight after the stall, before any await.
 */

const clients: LockClient[] = [];
function client(): LockClient {
  const created = createLockClient(freshMemory('stall').url);
  clients.push(created);
  return created;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((each) => each.close()));
});

/** Blocks the event loop until `ms` have passed: a busy loop on the clock, no timer involved. */
function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // nothing else runs: timers, I/O and the renewer wait
  }
}

describe('a holder stalled past its lease', () => {
  it('a saved lock.signal reads aborted at once, with the LockLostError as reason; throwIfAborted throws it', async () => {
    const lock = await client().acquire('k', { ttlMs: 100, autoRenew: false });
    const signal = lock.signal;
    expect(signal.aborted).toBe(false);
    stall(150);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(() => signal.throwIfAborted()).toThrow(LockLostError);
    await lock.release();
  });

  it('reason and throwIfAborted read the clock too (each read first)', async () => {
    const locks = client();
    const first = await locks.acquire('a', { ttlMs: 100, autoRenew: false });
    const second = await locks.acquire('b', { ttlMs: 100, autoRenew: false });
    const [a, b] = [first.signal, second.signal];
    stall(150);
    expect(a.reason).toBeInstanceOf(LockLostError);
    expect(() => b.throwIfAborted()).toThrow(LockLostError);
    await Promise.all([first.release(), second.release()]);
  });

  it("the 'abort' listener runs in the read that finds the lease over, and 'lost' is emitted then", async () => {
    const locks = client();
    const lock = await locks.acquire('k', { ttlMs: 100, autoRenew: false });
    const signal = lock.signal;
    const heard: string[] = [];
    signal.addEventListener('abort', () => heard.push('abort'));
    locks.on('lost', () => heard.push('lost'));
    stall(150);
    expect(heard).toEqual([]); // no timer ran: nothing has told the listeners yet
    expect(signal.aborted).toBe(true);
    expect(heard).toEqual(['abort', 'lost']);
    await lock.release();
  });

  it('assertHeld() throws LockLostError after the stall, and passes while the lease is live', async () => {
    const lock = await client().acquire('k', { ttlMs: 100, autoRenew: false });
    expect(() => lock.assertHeld()).not.toThrow();
    stall(150);
    expect(() => lock.assertHeld()).toThrow(LockLostError);
    await lock.release();
  });

  it('assertHeld() throws LockLostError once the lock is released', async () => {
    const lock = await client().acquire('k');
    await lock.release();
    expect(() => lock.assertHeld()).toThrow(LockLostError);
  });

  it("a released lock's saved signal is not declared lost by a late read", async () => {
    const locks = client();
    let lost = 0;
    locks.on('lost', () => lost++);
    const lock = await locks.acquire('k', { ttlMs: 100, autoRenew: false });
    const signal = lock.signal;
    await lock.release();
    stall(150);
    expect(signal.aborted).toBe(false);
    expect(lost).toBe(0);
  });

  it("acquireAll's signal reads aborted at once, and the multi-lock's assertHeld throws", async () => {
    const all = await client().acquireAll(['a', 'b', 'c'], { ttlMs: 100, autoRenew: false });
    const signal = all.signal;
    expect(signal.aborted).toBe(false);
    expect(() => all.assertHeld()).not.toThrow();
    stall(150);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(() => all.assertHeld()).toThrow(LockLostError);
    await all.release();
  });

  it("an election term's signal reads aborted at once, and term.assertHeld throws", async () => {
    const election = client().elect('leader', { id: 'a', ttlMs: 100 });
    const iterator = election[Symbol.asyncIterator]();
    const next = await iterator.next();
    if (next.done === true) throw new Error('no term');
    const term = next.value;
    expect(term.signal.aborted).toBe(false);
    expect(() => term.assertHeld()).not.toThrow();
    // Auto-renewed at ttl/3: only a stall keeps the renewal from running.
    stall(150);
    expect(term.signal.aborted).toBe(true);
    expect(term.signal.reason).toBeInstanceOf(LockLostError);
    expect(() => term.assertHeld()).toThrow(LockLostError);
    await election.resign();
  });

  it('read-write and semaphore holds: saved signals and assertHeld read the clock', async () => {
    const locks = client();
    const write = await locks.readWriteLock('doc').write.acquire({ ttlMs: 100, autoRenew: false });
    const permit = await locks.semaphore('quota', { permits: 2 }).acquire({ ttlMs: 100, autoRenew: false });
    const [writeSignal, permitSignal] = [write.signal, permit.signal];
    stall(150);
    expect(writeSignal.aborted).toBe(true);
    expect(permitSignal.aborted).toBe(true);
    expect(() => write.assertHeld()).toThrow(LockLostError);
    expect(() => permit.assertHeld()).toThrow(LockLostError);
    await Promise.all([write.release(), permit.release()]);
  });

  it('heldCount counts only leases within their deadline', async () => {
    const locks = client();
    const [short, long] = [await locks.acquire('short', { ttlMs: 100, autoRenew: false }), await locks.acquire('long', { ttlMs: 60_000 })];
    expect(locks.heldCount).toBe(2);
    stall(150);
    expect(locks.heldCount).toBe(1);
    await Promise.all([short.release(), long.release()]);
  });

  it('an auto-renewed lock stalled past its ttl reads lost too (the renewal could not run)', async () => {
    const lock = await client().acquire('k', { ttlMs: 100, autoRenew: true });
    const signal = lock.signal;
    stall(150);
    expect(lock.held).toBe(false);
    expect(signal.aborted).toBe(true);
    await lock.release();
  });
});
