import { afterEach, describe, expect, it } from 'vitest';
import {
  createMemoryBackend,
  memoryCapabilities,
  type AcquireRequest,
  type AttemptResult,
  type ElectionDriver,
  type Grant,
  type HoldDriver,
  type LockBackend,
  type MultiDriver,
} from '../src/adapter/index.js';
import { createLockClient, type LockClient } from '../src/index.js';
import { uniqueName } from './helpers.js';

/**
 * Contract v2: every hold goes back to the driver that issued it. The backend below is the memory
 * backend's drivers, each behind a recorder that logs `driver.method` (and a batch's size): the
 * log shows which driver core asked for what. The mutex driver is the backend object itself.
 *
 * Verified against two mutants of core: a lease kept by the backend whatever issued it (client.ts
 * grantLock passing `backend` as the keeper) fails all five cases; a renewer that sends a tick's
 * whole batch to the first lease's keeper fails "one renewMany per keeper per tick".
 */
class RoutedBackend implements LockBackend {
  readonly name = 'routed-memory';
  readonly capabilities = memoryCapabilities;
  readonly log: string[] = [];
  private readonly inner = createMemoryBackend(uniqueName('routing'));
  readonly kinds: HoldDriver;
  readonly election: ElectionDriver;
  readonly multi: MultiDriver;

  constructor() {
    const inner = this.inner;
    this.kinds = this.recorded('kinds', inner.kinds);
    const election = inner.election!;
    // A term is a memory mutex entry: its keeping is the inner mutex's, recorded as the election's.
    this.election = {
      campaign: (request, deadline, signal) => election.campaign(request, deadline, signal),
      leader: (key) => election.leader(key),
      ...this.recorded('election', { tryAcquire: () => Promise.reject(new Error('unused')), ...keepingOf(inner) }),
    };
    // The multi driver's grants are kept by a keeper of their own (not the mutex's driver).
    const keeper = this.recorded('multi.keeper', { tryAcquire: () => Promise.reject(new Error('unused')), ...keepingOf(inner) });
    this.multi = {
      tryAcquireMany: (requests) => {
        this.log.push('multi.tryAcquireMany');
        return inner.multi!.tryAcquireMany!(requests);
      },
      keeper,
    };
  }

  tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    this.log.push('mutex.tryAcquire');
    return this.inner.tryAcquire(request);
  }
  renew(grant: Grant, ttlMs: number): Promise<boolean> {
    this.log.push('mutex.renew');
    return this.inner.renew(grant, ttlMs);
  }
  renewMany(grants: readonly Grant[], ttlMs: readonly number[]): Promise<readonly boolean[]> {
    this.log.push(`mutex.renewMany ${grants.length}`);
    return Promise.all(grants.map((grant, index) => this.inner.renew(grant, ttlMs[index]!)));
  }
  release(grant: Grant): Promise<boolean> {
    this.log.push('mutex.release');
    return this.inner.release(grant);
  }
  validate(grant: Grant): Promise<boolean> {
    this.log.push('mutex.validate');
    return this.inner.validate(grant);
  }
  waitForChange(key: string, maxWaitMs: number, signal: AbortSignal): Promise<void> {
    return this.inner.waitForChange(key, maxWaitMs, signal);
  }
  async close(): Promise<void> {
    await this.inner.close();
  }

  /** Entries of the log made by one driver. */
  of(driver: string): string[] {
    return this.log.filter((entry) => entry.startsWith(`${driver}.`));
  }

  private recorded(label: string, driver: HoldDriver): HoldDriver {
    const log = this.log;
    return {
      tryAcquire: (request) => {
        log.push(`${label}.tryAcquire`);
        return driver.tryAcquire(request);
      },
      ...(driver.acquire
        ? {
            acquire: (request: AcquireRequest, deadline: number, signal: AbortSignal) => {
              log.push(`${label}.acquire`);
              return driver.acquire!(request, deadline, signal);
            },
          }
        : {}),
      renew: (grant, ttlMs) => {
        log.push(`${label}.renew`);
        return driver.renew(grant, ttlMs);
      },
      renewMany: (grants, ttlMs) => {
        log.push(`${label}.renewMany ${grants.length}`);
        return Promise.all(grants.map((grant, index) => driver.renew(grant, ttlMs[index]!)));
      },
      release: (grant) => {
        log.push(`${label}.release`);
        return driver.release(grant);
      },
      validate: (grant) => {
        log.push(`${label}.validate`);
        return driver.validate!(grant);
      },
    };
  }
}

/** The memory mutex's keeping methods, detached from its object. */
function keepingOf(inner: LockBackend): Omit<HoldDriver, 'tryAcquire'> {
  return {
    renew: (grant, ttlMs) => inner.renew(grant, ttlMs),
    release: (grant) => inner.release(grant),
    validate: (grant) => inner.validate!(grant),
  };
}

const clients: LockClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

function clientOn(backend: RoutedBackend): LockClient {
  const client = createLockClient({ backend });
  clients.push(client);
  return client;
}

/** Resolves once `count` 'renewed' events have been emitted. */
function renewals(client: LockClient, count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    client.on('renewed', () => {
      seen += 1;
      if (seen === count) resolve();
    });
  });
}

const short = { ttlMs: 300, autoRenew: true } as const;

describe('every hold goes back to the driver that issued it', () => {
  it('read, write and permit holds are attempted, renewed, validated and released by the kinds driver, never the mutex', async () => {
    const backend = new RoutedBackend();
    const client = clientOn(backend);
    const renewed = renewals(client, 3);
    const read = await client.readWriteLock('rw').read.acquire(short);
    const write = await client.readWriteLock('other').write.tryAcquire(short);
    const permit = await client.semaphore('sem', { permits: 2 }).acquire(short);
    await renewed;
    expect(await read.validate()).toBe(true);
    await Promise.all([read.release(), write?.release(), permit.release()]);
    expect(backend.of('mutex')).toEqual([]);
    expect(backend.of('kinds')).toEqual(
      expect.arrayContaining(['kinds.acquire', 'kinds.tryAcquire', 'kinds.renewMany 3', 'kinds.validate', 'kinds.release']),
    );
    expect(backend.of('kinds').filter((entry) => entry === 'kinds.release')).toHaveLength(3);
  });

  it('one renewMany per keeper per tick: mutex and kind holds taken together renew in two batches, one each', async () => {
    const backend = new RoutedBackend();
    const client = clientOn(backend);
    const renewed = renewals(client, 5);
    const locks = [
      await client.acquire('a', short),
      await client.acquire('b', short),
      await client.readWriteLock('c').read.acquire(short),
      await client.readWriteLock('d').write.acquire(short),
      await client.semaphore('e', { permits: 1 }).acquire(short),
    ];
    await renewed;
    const batches = backend.log.filter((entry) => entry.includes('.renew'));
    // The first tick renews everything taken together: exactly one batch per keeper, each whole.
    expect(batches.slice(0, 2).sort()).toEqual(['kinds.renewMany 3', 'mutex.renewMany 2']);
    await Promise.all(locks.map((lock) => lock.release()));
    expect(backend.of('mutex').filter((entry) => entry === 'mutex.release')).toHaveLength(2);
    expect(backend.of('kinds').filter((entry) => entry === 'kinds.release')).toHaveLength(3);
  });

  it('a term is renewed, validated and released by the election driver', async () => {
    const backend = new RoutedBackend();
    const client = clientOn(backend);
    const election = client.elect('leadership', { id: 'me', ttlMs: 300 });
    const renewed = renewals(client, 1);
    const iterator = election[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.done).toBe(false);
    await renewed;
    if (!first.done) expect(await first.value.validate()).toBe(true);
    await election.resign();
    expect(backend.of('mutex')).toEqual([]);
    expect(backend.of('election')).toEqual(['election.renewMany 1', 'election.validate', 'election.release']);
  });

  it("a multi-lock's grants are renewed, validated and released by multi.keeper when the driver names one", async () => {
    const backend = new RoutedBackend();
    const client = clientOn(backend);
    const renewed = renewals(client, 2);
    const multi = await client.acquireAll(['x', 'y'], short);
    await renewed;
    expect(await multi.validate()).toBe(true);
    await multi.release();
    expect(backend.of('mutex')).toEqual([]);
    expect(backend.of('multi')).toEqual([
      'multi.tryAcquireMany',
      'multi.keeper.renewMany 2',
      'multi.keeper.validate',
      'multi.keeper.validate',
      'multi.keeper.release',
      'multi.keeper.release',
    ]);
  });

  it('close() releases every hold through its own keeper', async () => {
    const backend = new RoutedBackend();
    const client = createLockClient({ backend });
    await client.acquire('m');
    await client.readWriteLock('r').read.acquire();
    await client.acquireAll(['p', 'q']);
    await client.close();
    expect(backend.of('mutex')).toEqual(['mutex.tryAcquire', 'mutex.release']);
    expect(backend.of('kinds')).toEqual(['kinds.acquire', 'kinds.release']);
    expect(backend.of('multi')).toEqual(['multi.tryAcquireMany', 'multi.keeper.release', 'multi.keeper.release']);
  });
});
