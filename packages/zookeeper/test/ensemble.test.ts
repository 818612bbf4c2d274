import { startZooKeeperEnsemble, type ServerHandle, type ZooKeeperEnsemble } from '@deadbolt/conformance/servers';
import { BackendUnavailableError } from '@deadbolt/core';
import { type Grant } from '@deadbolt/core/adapter';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperBackend, type ZooKeeperBackend } from '../src/index.js';
import { counter, request } from './support.js';

let ensemble: ZooKeeperEnsemble;
const backends: ZooKeeperBackend[] = [];
const base = '/deadbolt/ensemble-test';

function backend(hooks?: Parameters<typeof createZooKeeperBackend>[1]): ZooKeeperBackend {
  // A session timeout well above an election's length: the new leader renews sessions, we must not give up first.
  const created = createZooKeeperBackend(
    `${ensemble.url}${base}?sessionTimeoutMs=12000&connectTimeoutMs=3000&operationTimeoutMs=2000`,
    hooks,
  );
  backends.push(created);
  return created;
}

beforeAll(async () => {
  // Processes, whatever the suite's provider: a stopped container member's forwarded port stalls new
  // connections instead of refusing them, so clients spend their session timeout on it (seen in CI).
  ensemble = await startZooKeeperEnsemble(3, { provider: 'process' });
  console.info('[zookeeper] ensemble fault tests run on the process provider');
});
afterAll(async () => {
  for (const each of backends) await each.close();
  await ensemble?.stop();
});

describe('zookeeper on a 3-node ensemble', () => {
  it('leader loss: the holder keeps its lock, no second holder, acquisition resumes after the election', async () => {
    const holderBackend = backend();
    const holding = request('leader-loss', 'holder');
    const held = await holderBackend.tryAcquire(holding);
    if (!held.acquired) throw new Error('holder did not acquire');
    const queued = counter(1);
    const waiterBackend = backend({ onWatch: () => queued.hit() });
    let waiterGot: Grant | undefined;
    const waiting = waiterBackend
      .acquire(request('leader-loss', 'waiter'), Date.now() + 120_000, new AbortController().signal)
      .then((grant) => (waiterGot = grant));
    await queued.done;

    const leader: ServerHandle = await ensemble.leader();
    await leader.down();
    const downAt = Date.now();
    // Unavailability window: until a fresh lock can be taken again (each attempt fails fast with a typed error).
    const probe = backend();
    let unavailableMs = -1;
    let failures = 0;
    for (;;) {
      try {
        const result = await probe.tryAcquire(request(`probe-${failures}`, 'probe'));
        if (result.acquired) {
          unavailableMs = Date.now() - downAt;
          await probe.release(result.grant);
          break;
        }
      } catch (error) {
        expect(error).toBeInstanceOf(BackendUnavailableError);
        failures += 1;
        if (Date.now() - downAt > 60_000) throw error;
      }
    }
    console.log(`[zookeeper] leader loss: acquisition unavailable for ${unavailableMs} ms (${failures} failed attempts)`);
    // The holder kept it: its session moved to a surviving member.
    expect(holding.lost).toHaveLength(0);
    expect(await holderBackend.renew(held.grant)).toBe(true);
    expect(waiterGot).toBeUndefined();
    expect((await probe.tryAcquire(request('leader-loss', 'intruder'))).acquired).toBe(false);
    // And the queue still works: the release wakes the waiter.
    expect(await holderBackend.release(held.grant)).toBe(true);
    const next = await waiting;
    expect(next?.owner).toBe('waiter');
    expect(next!.fence).toBeGreaterThan(held.grant.fence!);
    await waiterBackend.release(next!);
    await leader.up();
  });

  it('majority loss: acquire fails with a typed error within the deadline; the holder is told once its session must have expired', async () => {
    const holderBackend = createZooKeeperBackend(
      `${ensemble.url}${base}?sessionTimeoutMs=6000&connectTimeoutMs=2000&operationTimeoutMs=2000`,
    );
    backends.push(holderBackend);
    const holding = request('majority', 'holder');
    expect((await holderBackend.tryAcquire(holding)).acquired).toBe(true);
    const other = backend();
    expect((await other.tryAcquire(request('majority-warm', 'other'))).acquired).toBe(true);
    const leader = await ensemble.leader();
    const followers = ensemble.members.filter((member) => member !== leader);
    await Promise.all([leader.down(), followers[0]!.down()]);
    const downAt = Date.now();
    await expect(other.acquire(request('majority-2', 'other'), Date.now() + 1_000, new AbortController().signal)).rejects.toBeInstanceOf(
      BackendUnavailableError,
    );
    const failedAfterMs = Date.now() - downAt;
    expect(failedAfterMs).toBeLessThan(2_000 + 3_000 + 3_000);
    const lost = await holding.lostOnce;
    const lostAfterMs = Date.now() - downAt;
    console.log(`[zookeeper] majority loss: typed failure after ${failedAfterMs} ms; holder told after ${lostAfterMs} ms`);
    expect(lost.cause.message).toMatch(/session/);
    expect(holding.lost).toHaveLength(1);
  });
});
