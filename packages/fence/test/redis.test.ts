import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { InvalidArgumentError } from '@deadbolt/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StaleFenceError } from '../src/index.js';
import { fenceRecordKey, fencedDel, fencedSet, readFence } from '../src/redis.js';

let server: ServerHandle;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  await redis?.quit().catch(() => redis.disconnect());
  await server?.stop();
});

const staleOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('fencedSet and fencedDel on Redis', () => {
  it('writes a first fence, a larger one and an equal one; a smaller one throws StaleFenceError and leaves the value', async () => {
    await fencedSet(redis, 'order:1', 'paid by 5', 5);
    await fencedSet(redis, 'order:1', 'shipped by 9', 9);
    await fencedSet(redis, 'order:1', 'noted by 9', 9);
    const stale = await staleOf(fencedSet(redis, 'order:1', 'refunded by 8', 8));
    expect(stale).toBeInstanceOf(StaleFenceError);
    expect(stale).toMatchObject({ resource: 'order:1', fence: 8, newerFence: 9, code: 'STALE_FENCE' });
    // Other readers read the value with a plain GET.
    expect(await redis.get('order:1')).toBe('noted by 9');
    expect(await readFence(redis, 'order:1')).toBe(9);
  });

  it('pxMs expires the value; the fence record stays and still refuses an older fence', async () => {
    await fencedSet(redis, 'session', 'v', 3, { pxMs: 60_000 });
    const pttl = await redis.pttl('session');
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(60_000);
    expect(await redis.pttl(fenceRecordKey('session'))).toBe(-1);
    await fencedSet(redis, 'session', 'v', 3); // without pxMs: no expiry (SET drops the old one)
    expect(await redis.pttl('session')).toBe(-1);
  });

  it('a delete keeps a tombstone: a stale write after it is refused, the key stays absent', async () => {
    await fencedSet(redis, 'cart', 'full', 4);
    await fencedDel(redis, 'cart', 6);
    expect(await redis.exists('cart')).toBe(0);
    expect(await staleOf(fencedSet(redis, 'cart', 'stale', 5))).toMatchObject({ fence: 5, newerFence: 6 });
    expect(await staleOf(fencedDel(redis, 'cart', 5))).toBeInstanceOf(StaleFenceError);
    expect(await redis.exists('cart')).toBe(0);
    expect(await redis.pttl(fenceRecordKey('cart'))).toBe(-1);
    await fencedSet(redis, 'cart', 'new', 7);
    expect(await redis.get('cart')).toBe('new');
  });

  it('a stale delete leaves the value', async () => {
    await fencedSet(redis, 'kept', 'v', 10);
    expect(await staleOf(fencedDel(redis, 'kept', 9))).toMatchObject({ newerFence: 10 });
    expect(await redis.get('kept')).toBe('v');
  });

  it('stores keys and values exactly: quotes, unicode, Lua and Redis specials, binary', async () => {
    const keys = [
      "it's",
      '"; redis.call("FLUSHALL") --',
      "'; drop table x; --",
      'зам\u00f6k 🔒',
      '%s %d [[',
      ']]..nil',
      'a{}b',
      '{tag}rest',
      'x}y',
      ' ',
    ];
    for (const [index, key] of keys.entries()) await fencedSet(redis, key, `${key}=${index}`, 100 + index);
    for (const [index, key] of keys.entries()) {
      expect(await redis.get(key), key).toBe(`${key}=${index}`);
      expect(await readFence(redis, key), key).toBe(100 + index);
      expect(await staleOf(fencedSet(redis, key, 'stale', 1)), key).toBeInstanceOf(StaleFenceError);
    }
    const binary = Buffer.from([0, 255, 10, 13, 0x22]);
    await fencedSet(redis, 'binary', binary, 1);
    expect(await redis.getBuffer('binary')).toEqual(binary);
  });

  it('keys that hash alike keep separate records (abc and {abc})', async () => {
    await fencedSet(redis, 'abc', 'v', 50);
    await fencedSet(redis, '{abc}', 'v', 1);
    expect(await readFence(redis, '{abc}')).toBe(1);
    expect(fenceRecordKey('abc')).not.toBe(fenceRecordKey('{abc}'));
  });

  it("a data key in the records' namespace is refused before any I/O: it could overwrite another key's record", async () => {
    await fencedSet(redis, 'victim', 'v', 5);
    await expect(fencedSet(redis, fenceRecordKey('victim'), 'not a number', 9)).rejects.toThrow(InvalidArgumentError);
    await expect(fencedDel(redis, fenceRecordKey('victim'), 9)).rejects.toThrow(/deadbolt-fence:/);
    await fencedSet(redis, 'victim', 'w', 6);
    expect(await readFence(redis, 'victim')).toBe(6);
  });

  it('keeps fences up to Number.MAX_SAFE_INTEGER exactly', async () => {
    await fencedSet(redis, 'big', 'v', Number.MAX_SAFE_INTEGER - 1);
    await fencedSet(redis, 'big', 'v', Number.MAX_SAFE_INTEGER);
    expect(await staleOf(fencedSet(redis, 'big', 'w', Number.MAX_SAFE_INTEGER - 1))).toMatchObject({
      newerFence: Number.MAX_SAFE_INTEGER,
    });
    expect(await readFence(redis, 'big')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('loads the script again after SCRIPT FLUSH (NOSCRIPT: EVAL)', async () => {
    await fencedSet(redis, 'flushed', 'a', 1);
    await redis.script('FLUSH');
    await fencedSet(redis, 'flushed', 'b', 2);
    expect(await redis.get('flushed')).toBe('b');
  });

  it('concurrent writers of one key from 8 connections: the value always ends with the largest fence', async () => {
    const writers = Array.from({ length: 8 }, () => new Redis(server.url, { maxRetriesPerRequest: 1 }));
    try {
      const fences = Array.from({ length: 200 }, (_, index) => index + 1).sort(() => Math.random() - 0.5);
      const outcomes = await Promise.all(
        fences.map((fence, index) =>
          fencedSet(writers[index % writers.length]!, 'race', String(fence), fence).then(
            () => 'written',
            (error: unknown) => (error instanceof StaleFenceError ? 'refused' : error),
          ),
        ),
      );
      expect(outcomes.filter((outcome) => outcome !== 'written' && outcome !== 'refused')).toEqual([]);
      expect(await redis.get('race')).toBe('200');
      expect(await readFence(redis, 'race')).toBe(200);
    } finally {
      await Promise.all(writers.map((writer) => writer.quit()));
    }
  });

  it("a server that stops answering: the client's own timeout error comes through and nothing hangs; a retry with the same fence is admitted", async () => {
    const timed = new Redis(server.url, { maxRetriesPerRequest: 0, commandTimeout: 1_000 });
    try {
      await fencedSet(timed, 'paused', 'before', 1);
      await server.pause();
      const started = performance.now();
      const error = await fencedSet(timed, 'paused', 'during', 2).catch((caught: unknown) => caught);
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/timed out/i);
    } finally {
      await server.resume();
      timed.disconnect();
    }
    // A timeout does not say whether the write landed (the paused server ran it on resume): the
    // holder may retry with the same fence, which is admitted.
    await fencedSet(redis, 'paused', 'during', 2);
    expect(await redis.get('paused')).toBe('during');
  });
});
