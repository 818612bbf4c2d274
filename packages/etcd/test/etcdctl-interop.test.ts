import { startEtcd, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import type { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend, leaseHex } from '../src/index.js';
import { contenders, etcdctl, rawClient } from './support.js';

/**
 * Wire compatibility with etcd's Go `concurrency` package, checked against the real etcdctl
 * (`etcdctl lock`, `etcdctl elect`), which is built on it: same keys, same order, mutual exclusion.
 */
let server: ServerHandle;
let raw: Etcd3;
const clients: LockClient[] = [];

function client(): LockClient {
  const made = createLockClient({ backend: createEtcdBackend(server.url) });
  clients.push(made);
  return made;
}

beforeAll(async () => {
  server = await startEtcd();
  raw = rawClient(server.url);
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  raw?.close();
  await server?.stop();
});

describe('mutex, Go concurrency.Mutex layout', () => {
  it('holds <name>/<lease hex>; `etcdctl lock` queues behind it and gets the lock only after our release', async () => {
    const ours = await client().acquire('jobs', { waitMs: 0 });
    const [held] = await contenders(raw, 'jobs/');
    expect(held?.key).toMatch(/^jobs\/[0-9a-f]+$/);
    expect(held?.revision).toBe(ours.fence);
    const leases = await raw.leaseClient.leaseLeases({});
    expect(leases.leases.map((lease) => leaseHex(String(lease.ID)))).toContain(held!.key.slice('jobs/'.length));

    const theirs = etcdctl(server.url, ['lock', 'jobs', '--', 'echo', 'etcdctl-got-it']);
    await expect.poll(async () => (await contenders(raw, 'jobs/')).length, { timeout: 15_000 }).toBe(2);
    expect(theirs.output()).not.toContain('etcdctl-got-it');
    await ours.release();
    await theirs.printed(/etcdctl-got-it/);
    expect(await theirs.exited()).toBe(0);
    expect(await contenders(raw, 'jobs/')).toEqual([]);
  });

  it('waits behind a lock `etcdctl lock` holds (tryAcquire refused, acquire granted after etcdctl lets go), fenced above it', async () => {
    const theirs = etcdctl(server.url, ['lock', 'reports']);
    const theirKey = await theirs.printed(/^reports\/[0-9a-f]+$/m);
    const locks = client();
    await expect(locks.acquire('reports', { waitMs: 0 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    expect((await contenders(raw, 'reports/')).map((each) => each.key)).toEqual([theirKey]);
    const waiting = locks.acquire('reports', { waitMs: 20_000 });
    await expect.poll(async () => (await contenders(raw, 'reports/')).length, { timeout: 15_000 }).toBe(2);
    const [first] = await contenders(raw, 'reports/');
    theirs.child.kill('SIGINT');
    const ours = await waiting;
    expect(ours.fence).toBeGreaterThan(first!.revision);
    await ours.release();
    await theirs.exited();
  });
});

describe('election, Go concurrency.Election layout', () => {
  it('leader() names the leader `etcdctl elect` made', async () => {
    const theirs = etcdctl(server.url, ['elect', 'primary', 'node-from-etcdctl']);
    await theirs.printed(/node-from-etcdctl/);
    const election = client().elect('primary', { id: 'deadbolt-node' });
    expect(await election.leader()).toBe('node-from-etcdctl');
    theirs.child.kill('SIGINT');
    await theirs.exited();
  });

  it('`etcdctl elect -l` observes our leader; our term is our key\u2019s create_revision', async () => {
    const election = client().elect('standby', { id: 'deadbolt-leader' });
    const iterator = election[Symbol.asyncIterator]();
    const { value: term } = await iterator.next();
    const [key] = await contenders(raw, 'standby/');
    expect(key).toMatchObject({ value: 'deadbolt-leader', revision: term.term });
    const observer = etcdctl(server.url, ['elect', '-l', 'standby']);
    await observer.printed(/deadbolt-leader/);
    observer.child.kill('SIGINT');
    await observer.exited();
    await election.resign();
    expect(await contenders(raw, 'standby/')).toEqual([]);
  });
});
