import { InvalidArgumentError } from '@deadbolt/core';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createMemoryFenceGuard, parseFenceHeader } from '../src/index.js';
import { admitFence, type Queryable } from '../src/postgres.js';
import { fencedDel, fencedSet } from '../src/redis.js';

/** Stand-ins that only count calls: bad input must be refused before any of them. */
function counting(): { calls: string[]; queryable: Queryable; redis: Redis } {
  const calls: string[] = [];
  const record = (name: string) => async () => {
    calls.push(name);
    throw new Error(`${name} was called`);
  };
  return {
    calls,
    queryable: { query: record('query') },
    redis: { evalsha: record('evalsha'), eval: record('eval'), get: record('get') } as unknown as Redis,
  };
}

const badFences: [string, unknown][] = [
  ['missing', undefined],
  ['null', null],
  ['a string of digits', '5'],
  ['NaN', Number.NaN],
  ['negative', -1],
  ['not an integer', 1.5],
  ['unsafe', 2 ** 53],
  ['infinite', Number.POSITIVE_INFINITY],
  ['a bigint', 5n],
];

const badResources: [string, unknown][] = [
  ['empty', ''],
  ['not a string', 42],
  ['missing', undefined],
  ['with NUL', 'a\u0000b'],
  ['a lone surrogate', 'a\ud800'],
];

describe('bad input is an InvalidArgumentError before any I/O', () => {
  it.each(badFences)('a fence that is %s', async (_, fence) => {
    const { calls, queryable, redis } = counting();
    await expect(admitFence(queryable, 'r', fence as number)).rejects.toThrow(InvalidArgumentError);
    await expect(fencedSet(redis, 'k', 'v', fence as number)).rejects.toThrow(InvalidArgumentError);
    await expect(fencedDel(redis, 'k', fence as number)).rejects.toThrow(InvalidArgumentError);
    await expect(createMemoryFenceGuard().admit('r', fence as number)).rejects.toThrow(InvalidArgumentError);
    expect(calls).toEqual([]);
  });

  it.each(badResources)('a resource that is %s', async (_, resource) => {
    const { calls, queryable, redis } = counting();
    await expect(admitFence(queryable, resource as string, 1)).rejects.toThrow(InvalidArgumentError);
    await expect(fencedSet(redis, resource as string, 'v', 1)).rejects.toThrow(InvalidArgumentError);
    await expect(fencedDel(redis, resource as string, 1)).rejects.toThrow(InvalidArgumentError);
    await expect(createMemoryFenceGuard().admit(resource as string, 1)).rejects.toThrow(InvalidArgumentError);
    expect(calls).toEqual([]);
  });

  it('a missing fence says where fences come from', async () => {
    const { queryable } = counting();
    await expect(admitFence(queryable, 'r', undefined as unknown as number)).rejects.toThrow(/lock\.fence.*fencing: true/);
  });

  it.each([
    ['a quote', { table: 'a"b' }],
    ['SQL', { table: 'x; drop table y' }],
    ['too long', { table: 'x'.repeat(64) }],
    ['a bad schema', { schema: 'public.x' }],
    ['not an object', 'deadbolt_admitted_fences'],
  ])('a table option with %s', async (_, options) => {
    const { calls, queryable } = counting();
    await expect(admitFence(queryable, 'r', 1, options as never)).rejects.toThrow(InvalidArgumentError);
    expect(calls).toEqual([]);
  });

  it.each([
    ['zero', { pxMs: 0 }],
    ['fractional', { pxMs: 1.5 }],
    ['a string', { pxMs: '100' }],
    ['not an object', 100],
  ])('a pxMs that is %s, and a value that is not a string or Buffer', async (_, options) => {
    const { calls, redis } = counting();
    await expect(fencedSet(redis, 'k', 'v', 1, options as never)).rejects.toThrow(InvalidArgumentError);
    await expect(fencedSet(redis, 'k', 5 as unknown as string, 1)).rejects.toThrow(InvalidArgumentError);
    expect(calls).toEqual([]);
  });

  it("an ioredis client with a keyPrefix (its records would differ from an unprefixed client's)", async () => {
    const { calls, redis } = counting();
    const prefixed = { ...redis, options: { keyPrefix: 'app:' } } as unknown as Redis;
    await expect(fencedSet(prefixed, 'k', 'v', 1)).rejects.toThrow(/keyPrefix "app:".*without keyPrefix/);
    await expect(fencedDel(prefixed, 'k', 1)).rejects.toThrow(InvalidArgumentError);
    expect(calls).toEqual([]);
  });

  it('a client that is not a client', async () => {
    await expect(admitFence({} as Queryable, 'r', 1)).rejects.toThrow(InvalidArgumentError);
    await expect(fencedSet(null as unknown as Redis, 'k', 'v', 1)).rejects.toThrow(InvalidArgumentError);
  });

  it.each([
    ['missing', undefined],
    ['repeated', ['1', '2']],
    ['negative', '-1'],
    ['fractional', '1.5'],
    ['hex', '0x10'],
    ['exponent', '1e3'],
    ['empty', ''],
    ['unsafe', '9007199254740992'],
    ['too long', '12345678901234567'],
  ])('a Deadbolt-Fence header that is %s', (_, value) => {
    expect(() => parseFenceHeader(value)).toThrow(InvalidArgumentError);
  });

  it('a Deadbolt-Fence header of digits is its fence', () => {
    expect(parseFenceHeader('42')).toBe(42);
    expect(parseFenceHeader(' 9007199254740991 ')).toBe(Number.MAX_SAFE_INTEGER);
  });
});
