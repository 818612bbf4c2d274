// `replicas`: a grant and each renewal wait (Redis WAIT) for that many replicas, on a real primary
// with one real replica.
import { startRedis, startRedisPrimaryReplica, startRedisSentinel, type RedisPrimaryReplica } from '@deadbolt/conformance/servers';
import { BackendUnavailableError, createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ReplicaAcknowledgementError } from '../src/index.js';
import { fenceKey } from '../src/keys.js';
import { grantOf, Opened, request } from './support.js';

const opened = new Opened();
let pair: RedisPrimaryReplica;

beforeAll(async () => {
  pair = await startRedisPrimaryReplica();
});
afterEach(() => opened.closeAll());
afterAll(async () => {
  await pair?.stop();
});

describe('replicas: options are checked before any I/O', () => {
  const rejected: [string, RegExp][] = [
    ['replicas=-1', /replicas/],
    ['replicas=1.5', /replicas/],
    ['replicas=1&mode=fair', /mode fair does not wait for replicas/],
    ['replicas=1&mode=redlock', /replicas/],
    ['replicas=1&replicaTimeoutMs=0', /replicaTimeoutMs/],
    ['replicas=1&replicaTimeoutMs=2000', /below commandTimeoutMs \(2000\)/],
    ['replicas=1&replicaTimeoutMs=500&commandTimeoutMs=400', /below commandTimeoutMs \(400\)/],
  ];
  for (const [query, message] of rejected) {
    it(query, () => {
      // Port 1: nothing listens there, and nothing is tried: the URL is refused first.
      expect(() => createLockClient(`redis://127.0.0.1:1?${query}`)).toThrow(InvalidArgumentError);
      expect(() => createLockClient(`redis://127.0.0.1:1?${query}`)).toThrow(message);
    });
  }

  it('the object form takes the same options', async () => {
    expect(() => createLockClient({ url: 'redis://127.0.0.1:1', options: { replicas: 1, mode: 'fair' } })).toThrow(InvalidArgumentError);
    await createLockClient({ url: 'redis://127.0.0.1:1', options: { replicas: 2, replicaTimeoutMs: 50 } }).close();
  });
});

for (const mode of ['setnx', 'hash-reentrant'] as const) {
  describe(`replicas on ${mode}`, () => {
    it('with replicas=1 a grant is on the replica when acquire returns, and renewals succeed', async () => {
      const backend = opened.backend(pair.primary.url, { mode, replicas: 1, replicaTimeoutMs: 1_000 });
      const onReplica = opened.raw(pair.replica.url);
      const grant = await grantOf(backend, request(`acked:${mode}`));
      // WAIT answered 1: the replica has applied the grant and its fence, without any wait of ours.
      expect(await onReplica.exists(`acked:${mode}`)).toBe(1);
      expect(Number(await onReplica.get(fenceKey(`acked:${mode}`)))).toBe(grant.fence);
      expect(await backend.renew(grant, 10_000)).toBe(true);
      expect(await backend.renewMany([grant], [10_000])).toEqual([true]);
      expect(await backend.release(grant)).toBe(true);
    });

    it('with replicas=2 (one exists) the acquire fails typed, says how many acknowledged, and leaves no lock', async () => {
      const backend = opened.backend(pair.primary.url, { mode, replicas: 2, replicaTimeoutMs: 50 });
      const onPrimary = opened.raw(pair.primary.url);
      const error = await backend.tryAcquire(request(`unacked:${mode}`)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ReplicaAcknowledgementError);
      expect((error as ReplicaAcknowledgementError).acknowledged).toBe(1);
      expect((error as ReplicaAcknowledgementError).required).toBe(2);
      expect(String(error)).toMatch(
        /acquire not acknowledged by enough replicas: 1 of 2 replicas acknowledged the grant within replicaTimeoutMs=50 .*, so the grant was taken back/,
      );
      console.info(`[replicas] ${String(error)}`);
      expect(await onPrimary.exists(`unacked:${mode}`)).toBe(0);
      // The key is free: a client without the option takes it at once.
      const plain = opened.backend(pair.primary.url, { mode });
      expect((await plain.tryAcquire(request(`unacked:${mode}`, 10_000, 'owner-b'))).acquired).toBe(true);
    });

    it('a renewal the replica does not acknowledge fails (the lease cannot be trusted through a failover)', async () => {
      const backend = opened.backend(pair.primary.url, { mode, replicas: 1, replicaTimeoutMs: 100 });
      const grant = await grantOf(backend, request(`renewal:${mode}`));
      await pair.replica.pause();
      try {
        expect(await backend.renew(grant, 10_000)).toBe(false);
        expect(await backend.renewMany([grant], [10_000])).toEqual([false]);
      } finally {
        await pair.replica.resume();
      }
      // Acknowledged again once the replica is back (WAIT waits for it to catch up).
      expect(await backend.renew(grant, 10_000)).toBe(true);
    });
  });
}

describe('replicas on elections and acquireAll (setnx)', () => {
  it('a term fewer replicas acknowledge is given back, reported on error, and the candidacy goes on', async () => {
    const locks = createLockClient({ url: pair.primary.url, options: { replicas: 2, replicaTimeoutMs: 50 } });
    const onPrimary = opened.raw(pair.primary.url);
    const stop = new AbortController();
    try {
      // A missing replica may come back, so the candidacy keeps campaigning; each refused term is an 'error'.
      const reported = new Promise<unknown>((resolve) => locks.on('error', ({ error }) => resolve(error)));
      const loop = (async () => {
        for await (const _ of locks.elect('acked-election', { id: 'node-a', signal: stop.signal })) return 'elected';
        return 'ended';
      })().catch((e: unknown) => e);
      expect(await reported).toBeInstanceOf(ReplicaAcknowledgementError);
      expect(await onPrimary.exists('deadbolt:acked-election')).toBe(0);
      stop.abort();
      expect(await loop).not.toBe('elected');
    } finally {
      stop.abort();
      await locks.close();
    }
  });

  it('with replicas=1 a term and an acquireAll are on the replica when they return', async () => {
    const locks = createLockClient({ url: pair.primary.url, options: { replicas: 1, replicaTimeoutMs: 1_000 } });
    const onReplica = opened.raw(pair.replica.url);
    try {
      for await (const term of locks.elect('acked-term', { id: 'node-a' })) {
        expect(Number(await onReplica.get(fenceKey('deadbolt:acked-term')))).toBe(term.term);
        break;
      }
      const all = await locks.acquireAll(['acked-all:1', 'acked-all:2']);
      expect(await onReplica.exists('deadbolt:acked-all:1', 'deadbolt:acked-all:2')).toBe(2);
      await all.release();
    } finally {
      await locks.close();
    }
  });
});

describe('replicas: a server that dies during WAIT', () => {
  it('fails the acquire typed (BackendUnavailableError), not with the connection-close AbortError of the pipeline', async () => {
    const server = await startRedis();
    try {
      // No replica at all: WAIT blocks for its whole replicaTimeoutMs, and the server dies meanwhile.
      const backend = opened.backend(server.url, { mode: 'setnx', replicas: 1, replicaTimeoutMs: 1_500 });
      const raw = opened.raw(server.url);
      const attempt = backend.tryAcquire(request('dies-during-wait')).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Wait until the server shows our WAIT blocked, then take the server down under it.
      const deadline = Date.now() + 5_000;
      while (!/cmd=wait/.test(String(await raw.client('LIST')))) {
        if (Date.now() > deadline) throw new Error('no client blocked in WAIT within 5 s');
      }
      await server.down();
      const error = await attempt;
      console.info(`[replicas] the server died during WAIT: ${String(error)}`);
      expect(error).toBeInstanceOf(BackendUnavailableError);
    } finally {
      await server.stop();
    }
  });
});

describe('replicas through Sentinel', () => {
  it('a master without replicas: replicas=1 fails typed with 0 of 1 and leaves the key free', async () => {
    const set = await startRedisSentinel();
    try {
      const locks = createLockClient(`${set.url}&replicas=1&replicaTimeoutMs=20`);
      const onMaster = opened.raw(set.master.url);
      try {
        const error = await locks.acquire('sentinel-acked', { waitMs: 0 }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ReplicaAcknowledgementError);
        expect((error as ReplicaAcknowledgementError).acknowledged).toBe(0);
        expect(await onMaster.exists('deadbolt:sentinel-acked')).toBe(0);
      } finally {
        await locks.close();
      }
    } finally {
      await set.stop();
    }
  });
});
