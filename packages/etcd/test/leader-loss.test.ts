import { type EtcdCluster, startEtcdCluster } from '@deadbolt/conformance/servers';
import { createLockClient, type Lock, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend } from '../src/index.js';
import { rawClient } from './support.js';

/**
 * A 3-member cluster loses its raft leader (the member stopped): the survivors elect a new one and
 * carry the leases over. Several clients take one key in a loop meanwhile, and one more holds a
 * lock across the whole loss; no two hold at once, and the long hold is never reported lost.
 */
let cluster: EtcdCluster;
const clients: LockClient[] = [];
// Long enough for keep-alives to be answered again after the election on a loaded CI machine: the
// client reports its lease lost once no keep-alive is answered within the TTL on its own clock, and
// with 3 s that happened once while three packages' tests ran side by side.
const sessionTtlMs = 6_000;

function client(): LockClient {
  const made = createLockClient({
    backend: createEtcdBackend(`${cluster.url}?sessionTtlMs=${sessionTtlMs}&callTimeoutMs=1000&dialTimeoutMs=1000`),
  });
  clients.push(made);
  return made;
}

/** The member that is raft leader now, as each member's maintenance status reports it. */
async function leaderIndex(among: readonly number[]): Promise<number | undefined> {
  const statuses = await Promise.all(
    among.map(async (index) => {
      const raw = rawClient(cluster.members[index]!.url);
      try {
        const status = await raw.maintenance.status({ deadline: Date.now() + 1_000 });
        return { index, leader: status.leader, self: status.header.member_id };
      } catch {
        return undefined;
      } finally {
        raw.close();
      }
    }),
  );
  const leaderId = statuses.find((status) => status !== undefined && status.leader !== '0')?.leader;
  return statuses.find((status) => status?.self === leaderId)?.index;
}

/** Polls the survivors' status until one of them is leader, within `timeoutMs`. */
async function newLeaderAmong(among: readonly number[], timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await leaderIndex(among);
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`no leader among members ${among.join(',')} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Resolves when `check()` holds, re-checked on each `tick`; rejects at the deadline. */
function until(check: () => boolean, ticks: EventTarget, timeoutMs: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      ticks.removeEventListener('tick', test);
      reject(new Error(`${what}: not within ${timeoutMs} ms`));
    }, timeoutMs);
    const test = (): void => {
      if (!check()) return;
      clearTimeout(timer);
      ticks.removeEventListener('tick', test);
      resolve();
    };
    ticks.addEventListener('tick', test);
    test();
  });
}

beforeAll(async () => {
  cluster = await startEtcdCluster(3);
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await cluster?.stop();
});

describe('etcd: the raft leader member goes', () => {
  it('no two clients hold one key at once, and a lock held across the loss stays held', async () => {
    const long = client();
    const kept: Lock = await long.acquire('kept');
    let keptLost: unknown;
    kept.signal.addEventListener('abort', () => {
      keptLost = kept.signal.reason;
    });

    const ticks = new EventTarget();
    const stop = new AbortController();
    let inside = 0;
    let overlaps = 0;
    const fences: number[] = [];
    const failures: unknown[] = [];
    const worker = async (locks: LockClient): Promise<void> => {
      while (!stop.signal.aborted) {
        let lock: Lock;
        try {
          lock = await locks.acquire('turns', { waitMs: 10_000, signal: stop.signal });
        } catch (error) {
          // A call that failed while the leader was away: not an overlap, and the loop goes on.
          if (!stop.signal.aborted) failures.push(error);
          continue;
        }
        // The interval check: our hold spans a turn of the event loop, where another grant would land.
        if (inside !== 0) overlaps += 1;
        inside += 1;
        fences.push(lock.fence!);
        await new Promise((resolve) => setImmediate(resolve));
        inside -= 1;
        await lock.release().catch((error: unknown) => failures.push(error));
        ticks.dispatchEvent(new Event('tick'));
      }
    };
    const workers = [client(), client(), client(), client()].map(worker);

    await until(() => fences.length >= 10, ticks, 30_000, 'ten turns before the loss');
    const leader = await leaderIndex([0, 1, 2]);
    expect(leader).toBeDefined();
    await cluster.members[leader!]!.down();
    const downAt = Date.now();
    const turnsAtLoss = fences.length;
    const survivors = [0, 1, 2].filter((index) => index !== leader);
    const newLeader = await newLeaderAmong(survivors, 20_000);
    expect(survivors).toContain(newLeader);

    // Past two session TTLs since the loss: a lease that was not kept alive through it is gone by now.
    await until(() => fences.length >= turnsAtLoss + 10 && Date.now() > downAt + 2 * sessionTtlMs, ticks, 60_000, 'turns after the loss');
    stop.abort();
    await Promise.all(workers);

    expect(overlaps).toBe(0);
    // Each grant's fence is above the one before it: one order of holders across the leader change.
    for (let index = 1; index < fences.length; index += 1) expect(fences[index]).toBeGreaterThan(fences[index - 1]!);
    expect(keptLost).toBeUndefined();
    expect(kept.held).toBe(true);
    // With the member still stopped: a call etcd3 sends to it moves on to a live member.
    expect(await kept.validate()).toBe(true);
    await cluster.members[leader!]!.up();
    expect(keptLost).toBeUndefined();
    await kept.release();
    console.info(
      `leader loss: member ${leader} stopped, member ${newLeader} leads; ${fences.length} turns (${fences.length - turnsAtLoss} after), ${failures.length} failed calls`,
    );
  });
});
