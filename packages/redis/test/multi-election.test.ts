import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { leaderKey } from '../src/election.js';
import { fenceKey, slotOf } from '../src/index.js';
import { bySlotThenKey } from '../src/multi.js';
import { Opened } from './support.js';

let server: ServerHandle;
const opened = new Opened();
const clients: LockClient[] = [];

function client(): LockClient {
  const created = createLockClient({ url: `${server.url}?mode=setnx`, prefix: '' });
  clients.push(created);
  return created;
}

beforeAll(async () => {
  server = await startRedis();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((each) => each.close()));
  await opened.closeAll();
});
afterAll(() => server?.stop());

describe('redis setnx acquireAll', () => {
  it('takes every key in one script: one token under each key, a fence per key from its counter', async () => {
    const raw = opened.raw(server.url);
    const all = await client().acquireAll(['m:b', 'm:a', 'm:c'], { ttlMs: 10_000 });
    const tokens = await Promise.all(['m:a', 'm:b', 'm:c'].map((key) => raw.get(key)));
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).toMatch(/^[0-9a-f]{32}$/);
    for (const key of ['m:a', 'm:b', 'm:c']) expect(all.fences.get(key)).toBe(Number(await raw.get(fenceKey(key))));
    await all.release();
    expect(await raw.exists('m:a', 'm:b', 'm:c')).toBe(0);
  });

  it('a busy key: nothing is written (no partial grant), and the fences of the free keys do not move', async () => {
    const raw = opened.raw(server.url);
    await raw.set('p:b', 'someone-else', 'PX', 10_000);
    const before = await raw.get(fenceKey('p:a'));
    await expect(client().acquireAll(['p:a', 'p:b'], { waitMs: 0 })).rejects.toThrow(/p:b/);
    expect(await raw.exists('p:a')).toBe(0);
    expect(await raw.get(fenceKey('p:a'))).toBe(before);
  });

  it('the global order is by Cluster slot, then by key', () => {
    const keys = ['order:1', 'order:2', 'order:3', 'order:4', '{t}a', '{t}b'];
    const ordered = bySlotThenKey([...keys].reverse());
    const slots = ordered.map(slotOf);
    expect([...slots].sort((a, b) => a - b)).toEqual(slots);
    expect(ordered.indexOf('{t}a')).toBe(ordered.indexOf('{t}b') - 1);
  });
});

describe('redis setnx election', () => {
  it('the term is the fence; the leader record `{k}:leader` holds "<token>\\n<id>" and names the leader only while it holds the lock', async () => {
    const raw = opened.raw(server.url);
    const election = client().elect('sched', { id: 'node-a' });
    const iterator = election[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.done).not.toBe(true);
    const token = await raw.get('sched');
    expect(await raw.get(leaderKey('sched'))).toBe(`${token}\nnode-a`);
    expect(first.value!.term).toBe(Number(await raw.get(fenceKey('sched'))));
    expect(await election.leader()).toBe('node-a');
    await election.resign();
    expect(await election.leader()).toBeNull();
    expect(await raw.exists('sched')).toBe(0);
  });

  it('a refused renewal (the key taken over) aborts the term signal and emits lost', async () => {
    const raw = opened.raw(server.url);
    const leader = client();
    const lost = new Promise<void>((resolve) => leader.once('lost', () => resolve()));
    const election = leader.elect('taken', { id: 'a', ttlMs: 600 });
    const term = (await election[Symbol.asyncIterator]().next()).value!;
    await raw.set('taken', 'intruder', 'PX', 10_000);
    await lost;
    expect(term.signal.aborted).toBe(true);
    expect(await client().elect('taken', { id: 'observer' }).leader()).toBeNull();
    await election.resign();
  });
});
