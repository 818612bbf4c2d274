import { type EtcdCluster, startEtcdCluster } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend } from '../src/index.js';
import { rawClient } from './support.js';

/**
 * One member of three stopped (a follower, so no leader election is under way): the client lists
 * all three, and etcd3 sends each call to a member picked at random. A call that cannot reach its
 * member must go on to another one within its deadline, so no operation fails for it.
 */
let cluster: EtcdCluster;
const clients: LockClient[] = [];

function client(): LockClient {
  const made = createLockClient({ backend: createEtcdBackend(`${cluster.url}?callTimeoutMs=2000&dialTimeoutMs=2000`) });
  clients.push(made);
  return made;
}

/** A member that is not the raft leader, from the first member's maintenance status. */
async function followerIndex(): Promise<number> {
  const ids = await Promise.all(
    cluster.members.map(async (member) => {
      const raw = rawClient(member.url);
      try {
        const status = await raw.maintenance.status({ deadline: Date.now() + 2_000 });
        return { self: status.header.member_id, leader: status.leader };
      } finally {
        raw.close();
      }
    }),
  );
  const leader = ids.find((each) => each.leader !== '0')?.leader;
  const index = ids.findIndex((each) => each.self !== leader);
  if (leader === undefined || index < 0) throw new Error('the cluster has no leader');
  return index;
}

beforeAll(async () => {
  cluster = await startEtcdCluster(3);
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await cluster?.stop();
});

describe('etcd: one member of three stopped', () => {
  it('every call reaches a live member: 30 acquires, validates and releases, none fails', async () => {
    const follower = await followerIndex();
    await cluster.members[follower]!.down();
    const locks = client();
    const failures: string[] = [];
    const started = Date.now();
    for (let turn = 0; turn < 30; turn += 1) {
      try {
        const lock = await locks.acquire(`key-${turn}`, { waitMs: 2_000 });
        expect(await lock.validate()).toBe(true);
        await lock.release();
      } catch (error) {
        failures.push(`turn ${turn}: ${String(error)}`);
      }
    }
    console.info(`[etcd failover] 30 turns with member ${follower + 1} of 3 stopped: ${Date.now() - started} ms`);
    expect(failures).toEqual([]);
    await cluster.members[follower]!.up();
  });
});
