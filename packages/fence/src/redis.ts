/**
 * `@deadbolt/fence/redis`: writes to a Redis key that go through only while the fence recorded for
 * the key is not newer than the writer's. The value stays a plain string at the key (GET reads it);
 * the fence sits beside it in the same Cluster slot (fenceRecordKey) and outlives the value.
 */
import { InvalidArgumentError } from '@deadbolt/core';
import { StaleFenceError } from './errors.js';
import { fenceRecordKey, recordPrefix } from './redis-keys.js';
import { type RedisClient, runFencedWrite } from './redis-script.js';
import { checkFence, checkResource } from './validate.js';

export type { RedisClient } from './redis-script.js';
export { fenceRecordKey } from './redis-keys.js';

export interface FencedSetOptions {
  /** Expire the value after this many ms (SET ... PX). The fence record does not expire. */
  readonly pxMs?: number;
}

/** A data key: any non-empty string outside the records' namespace. */
function checkKey(key: unknown): asserts key is string {
  checkResource(key, 'key');
  if (key.startsWith(recordPrefix)) {
    throw new InvalidArgumentError('key', `names starting with "${recordPrefix}" hold fence records; choose another name`, { key });
  }
}

function checkClient(redis: unknown): void {
  if (redis === null || typeof redis !== 'object' || typeof (redis as RedisClient).evalsha !== 'function') {
    throw new InvalidArgumentError('redis', 'expected an ioredis Redis or Cluster client');
  }
  // The record of a key must be the same for every client that writes it. ioredis would prefix the
  // record's name too, so a prefixed and an unprefixed client would keep two records for one key
  // (and on Cluster the prefixed record may land in another slot).
  const prefix = (redis as { options?: { keyPrefix?: unknown } }).options?.keyPrefix;
  if (typeof prefix === 'string' && prefix !== '') {
    throw new InvalidArgumentError(
      'redis',
      `this client has keyPrefix ${JSON.stringify(prefix)}; use a client without keyPrefix and pass the full key (${JSON.stringify(prefix)} + key)`,
    );
  }
}

function checkValue(value: unknown, key: string): asserts value is string | Buffer {
  if (typeof value !== 'string' && !Buffer.isBuffer(value)) {
    throw new InvalidArgumentError('value', `expected a string or a Buffer, got ${value === null ? 'null' : typeof value}`, { key });
  }
}

function checkPx(options: unknown, key: string): string {
  if (options === undefined) return '';
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('options', 'expected an object such as { pxMs: 60000 }', { key });
  const pxMs = (options as FencedSetOptions).pxMs;
  if (pxMs === undefined) return '';
  if (typeof pxMs !== 'number' || !Number.isSafeInteger(pxMs) || pxMs < 1) {
    throw new InvalidArgumentError('pxMs', `expected a positive integer of milliseconds, got ${String(pxMs)}`, { key });
  }
  return String(pxMs);
}

async function write(redis: RedisClient, key: string, fence: number, args: (string | Buffer)[]): Promise<void> {
  const [admitted, recorded] = await runFencedWrite(redis, [key, fenceRecordKey(key)], [String(fence), ...args]);
  if (admitted !== 1) throw new StaleFenceError(key, fence, Number(recorded));
}

/**
 * SET `key` to `value` (with PX `pxMs` if given) unless a newer fence has written it; then records
 * `fence` for it. A stale fence throws StaleFenceError and leaves the value as it was. Equal fences
 * are admitted. Bad input is an InvalidArgumentError before any I/O; the client's own errors (a
 * timeout, a dead server) pass through unchanged.
 */
export async function fencedSet(
  redis: RedisClient,
  key: string,
  value: string | Buffer,
  fence: number,
  options?: FencedSetOptions,
): Promise<void> {
  checkKey(key);
  checkValue(value, key);
  checkFence(fence, key);
  const px = checkPx(options, key);
  checkClient(redis);
  await write(redis, key, fence, ['set', value, px]);
}

/**
 * DEL `key` unless a newer fence has written it. The fence record stays (a tombstone that never
 * expires), so a stale write after the delete is still refused.
 */
export async function fencedDel(redis: RedisClient, key: string, fence: number): Promise<void> {
  checkKey(key);
  checkFence(fence, key);
  checkClient(redis);
  await write(redis, key, fence, ['del', '', '']);
}

/** The highest fence that has written `key` (deletes included), or undefined if none has. */
export async function readFence(redis: RedisClient, key: string): Promise<number | undefined> {
  checkResource(key, 'key');
  checkClient(redis);
  const recorded = await redis.get(fenceRecordKey(key));
  return recorded === null ? undefined : Number(recorded);
}
