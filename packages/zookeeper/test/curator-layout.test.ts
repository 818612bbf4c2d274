import { startZooKeeper, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, LockUpgradeError, type LockClient } from '@deadbolt/core';
import zookeeper from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperBackend } from '../src/index.js';
import { children, connectStringOf, createNode, exists, rawClient, removeNode, stat } from './support.js';

/**
 * The exact node names and layout of Apache Curator's InterProcessReadWriteLock and
 * InterProcessSemaphoreV2, and exclusion against nodes a Curator process would create (played here
 * by a raw ZooKeeper client writing Curator's names).
 */
let server: ServerHandle;
let raw: Awaited<ReturnType<typeof rawClient>>;
const base = '/deadbolt/curator-layout';
const clients: LockClient[] = [];
const uuid = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

function client(): LockClient {
  // parentCleanupDelayMs=0: the sweep of emptied parents is checked right after the release.
  const made = createLockClient({ backend: createZooKeeperBackend(`${server.url}${base}?sessionTimeoutMs=4000&parentCleanupDelayMs=0`) });
  clients.push(made);
  return made;
}

beforeAll(async () => {
  server = await startZooKeeper();
  raw = await rawClient(connectStringOf(server.url));
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await raw?.dispose();
  await server?.stop();
});

describe('read-write lock, Curator InterProcessReadWriteLock layout', () => {
  it('writes _c_<uuid>-__WRIT__<seq> and _c_<uuid>-__READ__<seq> directly under the lock path; a downgrade adds an EPHEMERAL __READ__ with the writer\u2019s sequence', async () => {
    const [owner, other] = [client(), client()];
    const rw = owner.readWriteLock('doc');
    let queued: Promise<Awaited<ReturnType<typeof rw.read.acquire>>> | undefined;
    let writeFence = 0;
    await rw.write.withLock(async (write) => {
      writeFence = write.fence!;
      const [writeNode] = await children(raw, `${base}/doc`);
      expect(writeNode).toMatch(new RegExp(`^_c_${uuid}-__WRIT__\\d{10}$`));
      queued = other.readWriteLock('doc').read.acquire({ waitMs: 10_000 });
      await expect.poll(async () => (await children(raw, `${base}/doc`)).length).toBe(2);
      const read = await rw.read.acquire({ waitMs: 0 });
      const names = await children(raw, `${base}/doc`);
      const writerSeq = writeNode!.slice(-10);
      const downgrade = names.find((name) => name !== writeNode && name.endsWith(`__READ__${writerSeq}`));
      expect(downgrade).toMatch(new RegExp(`^_c_${uuid}-__READ__${writerSeq}$`));
      expect(names.filter((name) => new RegExp(`^_c_${uuid}-__READ__\\d{10}$`).test(name))).toHaveLength(2);
      expect((await stat(raw, `${base}/doc/${downgrade}`))?.ephemeralOwner).toBeDefined();
      expect(write.fence).toBeLessThan(read.fence!);
      await read.release();
    });
    const lateRead = await queued!;
    expect(lateRead.fence!).toBeGreaterThan(writeFence);
    await lateRead.release();
    await expect.poll(() => exists(raw, `${base}/doc`)).toBe(false);
  });

  it('a Curator writer\u2019s node keeps Deadbolt readers and writers out; a Curator reader\u2019s node shares with readers only', async () => {
    const locks = client();
    const rw = locks.readWriteLock('shared');
    const writer = await createNode(
      raw,
      `${base}/shared/_c_00000000-0000-0000-0000-000000000001-__WRIT__`,
      zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
    );
    expect(await rw.read.tryAcquire()).toBeNull();
    expect(await rw.write.tryAcquire()).toBeNull();
    await removeNode(raw, writer);
    const reader = await createNode(
      raw,
      `${base}/shared/_c_00000000-0000-0000-0000-000000000002-__READ__`,
      zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
    );
    const read = await rw.read.tryAcquire();
    expect(read).not.toBeNull();
    expect(await rw.write.tryAcquire()).toBeNull();
    await read!.release();
    await removeNode(raw, reader);
  });

  it('upgrade is refused with LockUpgradeError before any node is created', async () => {
    const locks = client();
    const rw = locks.readWriteLock('upgrade');
    await rw.read.withLock(async () => {
      const before = await children(raw, `${base}/upgrade`);
      await expect(rw.write.acquire({ waitMs: 1_000 })).rejects.toBeInstanceOf(LockUpgradeError);
      expect(await children(raw, `${base}/upgrade`)).toEqual(before);
    });
  });
});

describe('semaphore, Curator InterProcessSemaphoreV2 layout', () => {
  it('holds a lease node <path>/leases/_c_<uuid>-lease-<seq>, passes the <path>/locks mutex, and sweeps leases, locks and the path when emptied', async () => {
    const locks = client();
    const permit = await locks.semaphore('quota', { permits: 2 }).acquire();
    const leases = await children(raw, `${base}/quota/leases`);
    expect(leases).toHaveLength(1);
    expect(leases[0]).toMatch(new RegExp(`^_c_${uuid}-lease-\\d{10}$`));
    expect(await children(raw, `${base}/quota/locks`)).toEqual([]); // the gate is passed, not held
    await permit.release();
    await expect.poll(() => exists(raw, `${base}/quota`)).toBe(false);
  });

  it('counts a Curator process\u2019s lease nodes: with 2 of 3 permits taken by Curator, Deadbolt gets exactly one', async () => {
    const [a, b] = [client(), client()];
    const foreign = [];
    for (const id of ['01', '02'])
      foreign.push(
        await createNode(
          raw,
          `${base}/mixed/leases/_c_00000000-0000-0000-0000-0000000000${id}-lease-`,
          zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
        ),
      );
    const sem = (c: LockClient) => c.semaphore('mixed', { permits: 3 });
    const mine = await sem(a).tryAcquire();
    expect(mine).not.toBeNull();
    expect(await sem(b).tryAcquire()).toBeNull();
    await removeNode(raw, foreign[0]!);
    const next = await sem(b).acquire({ waitMs: 5_000 });
    await Promise.all([mine!.release(), next.release(), removeNode(raw, foreign[1]!)]);
  });
});
