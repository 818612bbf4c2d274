import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The Redis adapter's hand-built 3-master cluster (no replicas), reused rather than copied.
import { type RedisCluster, startRedisCluster } from '../../redis/test/cluster.js';
import { StaleFenceError } from '../src/index.js';
import { fenceRecordKey, fencedDel, fencedSet, readFence } from '../src/redis.js';

let cluster: RedisCluster;
let client: Cluster;
let node: Redis;

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = new Cluster(
    cluster.nodes.map((address) => {
      const [host, port] = address.split(':');
      return { host: host!, port: Number(port) };
    }),
  );
  const [host, port] = cluster.nodes[0]!.split(':');
  node = new Redis({ host: host!, port: Number(port) });
});
afterAll(async () => {
  await client?.quit().catch(() => client.disconnect());
  node?.disconnect();
  await cluster?.stop();
});

// Keys on all three masters, with and without hash tags, and ones whose record needs a found tag.
const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'user:{42}:name', '{42}', '42', 'x}y', '{}x}', 'a{}b', 'зам\u00f6k', "'; --"];

describe('fencedSet and fencedDel on a 3-master Redis Cluster', () => {
  it('every fence record hashes to the slot of its value, as the server computes it (CLUSTER KEYSLOT)', async () => {
    const slots = new Set<number>();
    for (const key of keys) {
      const slot = Number(await node.call('CLUSTER', 'KEYSLOT', key));
      expect(Number(await node.call('CLUSTER', 'KEYSLOT', fenceRecordKey(key))), key).toBe(slot);
      slots.add(Math.floor(slot / 5462));
    }
    expect(slots.size).toBe(3);
  });

  it('writes, refuses a stale fence and keeps the tombstone across masters', async () => {
    for (const [index, key] of keys.entries()) {
      await fencedSet(client, key, `v${index}`, 10);
      await fencedSet(client, key, `w${index}`, 11, { pxMs: 60_000 });
      await expect(fencedSet(client, key, 'stale', 10)).rejects.toBeInstanceOf(StaleFenceError);
      expect(await client.get(key), key).toBe(`w${index}`);
      await fencedDel(client, key, 12);
      await expect(fencedSet(client, key, 'stale', 11)).rejects.toMatchObject({ newerFence: 12 });
      expect(await client.exists(key), key).toBe(0);
      expect(await readFence(client, key), key).toBe(12);
    }
  });
});
