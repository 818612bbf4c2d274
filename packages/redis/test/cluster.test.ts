import { createLockClient } from '@deadbolt/core';
import { type Grant } from '@deadbolt/core/adapter';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisBackend, fenceKey, ReplicaAcknowledgementError, slotOf, type RedisBackend } from '../src/index.js';
import { startRedisCluster, type RedisCluster } from './cluster.js';
import { grantOf, request, timed } from './support.js';

let cluster: RedisCluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterAll(() => cluster?.stop());

describe.each(['setnx', 'hash-reentrant'] as const)('redis %s on a 3-master Redis Cluster', (mode) => {
  it('keys in every slot range: acquire, busy, renew, renewMany across masters, release', async () => {
    const backend: RedisBackend = createRedisBackend({ mode, nodes: cluster.nodes });
    try {
      // Keys whose slots fall on all three masters, and one whose fence key needs a found tag.
      const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'x}y'].map((key) => `cluster:${mode}:${key}`);
      const slots = new Set(keys.map((key) => Math.floor(slotOf(key) / 5462)));
      expect(slots.size).toBe(3);
      for (const key of keys) expect(slotOf(fenceKey(key))).toBe(slotOf(key));
      const grants: Grant[] = [];
      for (const key of keys) grants.push(await grantOf(backend, request(key, 10_000, 'owner-1')));
      for (const key of keys) expect((await backend.tryAcquire(request(key, 10_000, 'owner-2'))).acquired).toBe(false);
      expect(await backend.renew(grants[0]!, 20_000)).toBe(true);
      expect(
        await backend.renewMany(
          grants,
          grants.map(() => 20_000),
        ),
      ).toEqual(grants.map(() => true));
      for (const grant of grants) expect(await backend.release(grant)).toBe(true);
      const again = await grantOf(backend, request(keys[0]!, 10_000, 'owner-2'));
      expect(again.fence).toBeGreaterThan(grants[0]!.fence ?? Number.POSITIVE_INFINITY);
      await backend.release(again);
    } finally {
      await backend.close();
    }
  });

  it('through createLockClient: a release wakes a waiter on another client via cluster pub/sub', async () => {
    const config = { backend: 'redis', options: { mode, nodes: cluster.nodes } };
    const a = createLockClient(config);
    const b = createLockClient(config);
    try {
      const held = await a.acquire('cluster:wake', { ttlMs: 30_000 });
      const waiting = timed(b.acquire('cluster:wake', { ttlMs: 30_000, waitMs: 20_000 }));
      const contended = new Promise<void>((resolve) => b.once('contended', () => resolve()));
      await contended;
      const releasedAt = performance.now();
      await held.release();
      const { value, error } = await waiting;
      expect(error).toBeUndefined();
      // The message, not core's 2 s fallback poll nor the 30 s ttl hint, woke the waiter.
      expect(performance.now() - releasedAt).toBeLessThan(1_500);
      await value?.release();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('replicas on a Redis Cluster without replicas', () => {
  it('WAIT goes to the master of each key (one pipeline per slot): acquires fail typed with 0 of 1 and leave no key', async () => {
    const backend = createRedisBackend({ mode: 'setnx', nodes: cluster.nodes, replicas: 1, replicaTimeoutMs: 20 });
    const plain = createRedisBackend({ mode: 'setnx', nodes: cluster.nodes });
    try {
      const keys = ['a', 'b', 'c', 'd', 'e', 'f'].map((key) => `cluster:replicas:${key}`);
      expect(new Set(keys.map((key) => Math.floor(slotOf(key) / 5462))).size).toBe(3);
      for (const key of keys) {
        const error = await backend.tryAcquire(request(key)).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ReplicaAcknowledgementError);
        expect((error as ReplicaAcknowledgementError).acknowledged).toBe(0);
        // Taken back on its master: a client without the option gets it at once.
        const grant = await grantOf(plain, request(key, 10_000, 'owner-b'));
        await plain.release(grant);
      }
    } finally {
      await Promise.all([backend.close(), plain.close()]);
    }
  });
});
