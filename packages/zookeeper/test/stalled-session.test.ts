import { randomUUID } from 'node:crypto';
import { startProxy, startZooKeeper, type ServerHandle, type TcpProxy } from '@deadbolt/conformance/servers';
import { createLockClient, LockLostError, type Lock, type LockClient } from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperBackend } from '../src/index.js';

/**
 * A ZooKeeper lock lives as long as its session, which has no ttl of its own: a holder that hears
 * nothing from the server (its process stalled, its link silent) must still know when the server
 * may have expired the session and given the lock to another client. The local deadline is the
 * send time of the last answered request + the negotiated session timeout (minus drift).
 */

let server: ServerHandle;
const base = `/deadbolt/stalled-${randomUUID().slice(0, 8)}`;
const sessionTimeoutMs = 4_000;
const query = `sessionTimeoutMs=${sessionTimeoutMs}&connectTimeoutMs=2000&operationTimeoutMs=2000`;
const clients: LockClient[] = [];
const proxies: TcpProxy[] = [];

function track(client: LockClient): LockClient {
  clients.push(client);
  return client;
}

beforeAll(async () => {
  server = await startZooKeeper();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((each) => each.close()));
  for (const proxy of proxies.splice(0)) await proxy.close();
});
afterAll(async () => {
  await server?.stop();
});

/** Blocks the event loop for `ms`: no timer, no reply, no heartbeat runs meanwhile. */
function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // a GC pause, as far as the process can tell
  }
}

describe('zookeeper: a holder that hears nothing for a session timeout', () => {
  it('stalled past the session timeout, a lock, its saved signal, acquireAll and a term read lost at the first look', async () => {
    const holder = track(createLockClient(`${server.url}${base}?${query}`));
    const lock = await holder.acquire('stalled');
    const all = await holder.acquireAll(['stalled-a', 'stalled-b']);
    const election = holder.elect('stalled-election', { id: 'a' });
    const next = await election[Symbol.asyncIterator]().next();
    if (next.done === true) throw new Error('no term');
    const term = next.value;
    const [signal, allSignal] = [lock.signal, all.signal];
    expect(lock.held).toBe(true);
    expect(signal.aborted).toBe(false);
    stall(sessionTimeoutMs + 500);
    // Read before any await: nothing the server sent meanwhile has been processed yet.
    expect(lock.held).toBe(false);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(() => lock.assertHeld()).toThrow(LockLostError);
    expect(allSignal.aborted).toBe(true);
    expect(() => all.assertHeld()).toThrow(LockLostError);
    expect(term.signal.aborted).toBe(true);
    expect(() => term.assertHeld()).toThrow(LockLostError);
    await Promise.all([lock.release(), all.release(), election.resign()]);
  }, 30_000);

  it('every answered request moves the deadline on: a holder that keeps talking keeps the lock past several session timeouts', async () => {
    const holder = track(createLockClient(`${server.url}${base}?${query}`));
    const lock = await holder.acquire('talking');
    const until = Date.now() + 2.5 * sessionTimeoutMs;
    while (Date.now() < until) {
      // The heartbeat and the renewals answer; each answer moves the shared deadline forward.
      await new Promise((resolve) => setTimeout(resolve, 250));
      lock.assertHeld();
    }
    expect(lock.held).toBe(true);
    await lock.release();
  }, 30_000);

  it('behind a silent link the holder reads lost no later than another client is granted the lock', async () => {
    const proxy = await startProxy(server.host, server.port);
    proxies.push(proxy);
    const backend = createZooKeeperBackend(`zookeeper://127.0.0.1:${proxy.port}${base}?${query}`);
    const holder = track(createLockClient({ backend }));
    const other = track(createLockClient(`${server.url}${base}?${query}`));
    const lock = await holder.acquire('silent', { waitMs: 0 });
    const firstFence = lock.fence!;
    let seenByHolder: { held: boolean; assertHeld: unknown } | undefined;
    const granted = other.acquire('silent', { waitMs: 20_000 }).then((next: Lock) => {
      // The moment the server has given the lock away, as the other client learns it.
      let thrown: unknown;
      try {
        lock.assertHeld();
      } catch (error) {
        thrown = error;
      }
      seenByHolder = { held: lock.held, assertHeld: thrown };
      return next;
    });
    proxy.partition(); // nothing reaches the server from the holder, nothing comes back
    const next = await granted;
    expect(seenByHolder?.held).toBe(false);
    expect(seenByHolder?.assertHeld).toBeInstanceOf(LockLostError);
    expect(next.fence!).toBeGreaterThan(firstFence);
    await next.release();
    proxy.heal();
  }, 40_000);
});
