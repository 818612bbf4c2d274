import { LockLostError } from '@deadbolt/core';
import type { ConformanceCase } from './context.js';
import { aborted, assert, delay, rejection } from './util.js';

const CONTENDERS = 20;
const ROUNDS = 5;

/** Mutual exclusion: a read-await-write counter is exact only if no two critical sections overlap. */
export const mutualExclusion: ConformanceCase = {
  title: `${CONTENDERS} contenders in separate clients never overlap on a non-atomic counter`,
  async run(ctx) {
    let counter = 0;
    let inside = 0;
    let overlaps = 0;
    const clients = Array.from({ length: CONTENDERS }, () => ctx.client());
    await Promise.all(
      clients.map(async (client) => {
        for (let round = 0; round < ROUNDS; round += 1) {
          await client.withLock(
            'counter',
            async () => {
              inside += 1;
              if (inside > 1) overlaps += 1;
              const read = counter;
              await delay(1); // a macrotask between read and write: any overlap loses an update
              counter = read + 1;
              inside -= 1;
            },
            { waitMs: 50_000, ttlMs: Math.max(ctx.ttlMs, 5_000) },
          );
        }
      }),
    );
    assert(overlaps === 0, `${overlaps} overlapping critical sections`);
    assert(counter === CONTENDERS * ROUNDS, `counter is ${counter}, expected ${CONTENDERS * ROUNDS}`);
  },
};

/** A release after expiry is compare-and-delete: it must never free the next holder's lock. */
export const nonOwnerRelease: ConformanceCase = {
  title: 'release after expiry never deletes the next holder\u2019s lock',
  requires: (o) => (o.capabilities.lease === 'ttl' ? undefined : `capabilities.lease is '${o.capabilities.lease}'`),
  async run(ctx) {
    const [first, second, third] = [ctx.client(), ctx.client(), ctx.client()];
    const old = await first.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    await aborted(old.signal, ctx.ttlMs * 3 + 5_000);
    const next = await second.acquire('k', { ttlMs: 30_000, waitMs: 5_000 });
    await old.release().catch(() => undefined);
    const probe = await third.tryAcquire('k');
    assert(probe === null, 'a third client took the key: the old handle\u2019s release deleted the new holder\u2019s lock');
    assert(next.held, 'the new holder lost its lock after the old handle\u2019s release');
    await next.release();
  },
};

export const renewAfterExpiry: ConformanceCase = {
  title: 'renew of an expired lock rejects with LockLostError',
  requires: (o) => (o.capabilities.lease === 'ttl' ? undefined : `capabilities.lease is '${o.capabilities.lease}'`),
  async run(ctx) {
    const [first, second] = [ctx.client(), ctx.client()];
    const lock = await first.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    await aborted(lock.signal, ctx.ttlMs * 3 + 5_000);
    const next = await second.acquire('k', { ttlMs: 30_000, waitMs: 5_000 });
    const error = await rejection(lock.renew());
    assert(error instanceof LockLostError, `expected LockLostError, got ${String(error)}`);
    assert((await ctx.client().tryAcquire('k')) === null, 'the failed renew disturbed the new holder');
    await next.release();
  },
};

export const doubleRelease: ConformanceCase = {
  title: 'double release is harmless and frees the key',
  async run(ctx) {
    const [a, b] = [ctx.client(), ctx.client()];
    const lock = await a.acquire('k');
    await lock.release();
    await lock.release();
    assert(!lock.held, 'lock still reports held after release');
    const other = await b.tryAcquire('k');
    assert(other !== null, 'key still busy after release');
    await lock.release();
    assert((await a.tryAcquire('k')) === null, 'a repeated release freed another holder\u2019s lock');
    await other.release();
  },
};

export const fencing: ConformanceCase = {
  title: 'fencing tokens strictly increase across 5 holders in different clients',
  requires: (o) => (o.capabilities.fencing ? undefined : 'capabilities.fencing is false'),
  async run(ctx) {
    const fences: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const lock = await ctx.client().acquire('k', { waitMs: 5_000 });
      assert(typeof lock.fence === 'number', `holder ${i} has no fence`);
      fences.push(lock.fence);
      await lock.release();
    }
    for (let i = 1; i < fences.length; i += 1) {
      assert(fences[i]! > fences[i - 1]!, `fences not strictly increasing: ${fences.join(', ')}`);
    }
  },
};

export const safetyCases: readonly ConformanceCase[] = [mutualExclusion, nonOwnerRelease, renewAfterExpiry, doubleRelease, fencing];
