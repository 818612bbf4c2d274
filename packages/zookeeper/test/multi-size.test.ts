import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { startProxy, startZooKeeper, type ServerHandle, type TcpProxy } from '@deadbolt/conformance/servers';
import { createLockClient, InvalidArgumentError, type LockClient } from '@deadbolt/core';
import zookeeper from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockPath, nodePrefix } from '../src/naming.js';
import { defaultJuteMaxBuffer, multiCreateBytes } from '../src/multi-size.js';

/**
 * ZooKeeper drops the connection on a request longer than jute.maxbuffer, so an acquireAll whose
 * one multi is too long used to see CONNECTION_LOSS, retry until waitMs ran out and blame the
 * server (7,000 short keys at the default 1 MB). The size is known before sending: it is refused
 * then, typed, naming the limit.
 */

interface Jute {
  readonly OP_CODES: { readonly MULTI: number };
  readonly protocol: { RequestHeader: new () => { type: number } };
  readonly Request: new (header: unknown, payload: unknown) => { toBuffer(): Buffer };
  readonly TransactionRequest: new (ops: unknown) => unknown;
}
const jute = createRequire(import.meta.url)('node-zookeeper-client/lib/jute/index.js') as Jute;

let server: ServerHandle;
let proxy: TcpProxy;
const base = `/deadbolt/multi-size-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  server = await startZooKeeper();
  proxy = await startProxy(server.host, server.port);
});
afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

describe('zookeeper acquireAll: the one multi request against jute.maxbuffer', () => {
  it('the size measured up front is the size node-zookeeper-client sends', () => {
    const unconnected = zookeeper.createClient('127.0.0.1:1');
    const specs = ['a', 'acct:2', 'ключ/with slash', 'k'.repeat(300)].map((key, index) => ({
      lockPath: lockPath(base, key),
      data: Buffer.from(`owner-${'x'.repeat(index * 17)}`, 'utf8'),
    }));
    const transaction = unconnected.transaction();
    for (const spec of specs)
      transaction.create(nodePrefix(spec.lockPath, randomUUID()), spec.data, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
    const header = new jute.protocol.RequestHeader();
    header.type = jute.OP_CODES.MULTI;
    const frame = new jute.Request(header, new jute.TransactionRequest((transaction as unknown as { ops: unknown }).ops)).toBuffer();
    // The frame starts with its own length, which the server compares with jute.maxbuffer.
    expect(multiCreateBytes(specs)).toBe(frame.readInt32BE(0));
    expect(multiCreateBytes(specs)).toBe(frame.length - 4);
  });

  it('7,000 keys at the default limit: InvalidArgumentError naming jute.maxbuffer, at once and before any connection', async () => {
    const locks: LockClient = createLockClient(`zookeeper://127.0.0.1:${proxy.port}${base}`);
    const keys = Array.from({ length: 7_000 }, (_, index) => `k${index}`);
    const startedAt = Date.now();
    const error = await locks.acquireAll(keys, { waitMs: 30_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toContain(`jute.maxbuffer of ${defaultJuteMaxBuffer} bytes`);
    expect((error as Error).message).toContain('7000 keys');
    // The key it names is short: the first key and the count, not 7,000 keys joined.
    expect((error as InvalidArgumentError).key).toBe('k0, ... (7000 keys)');
    expect(Date.now() - startedAt).toBeLessThan(30_000);
    expect(proxy.connections).toBe(0);
    await locks.close();
  });

  it('the juteMaxBuffer option moves the limit: a set that fits is taken, one key more is refused', async () => {
    const keys = ['fit-a', 'fit-b', 'fit-c'];
    const locks = createLockClient(`${server.url}${base}?juteMaxBuffer=4096`);
    const owner = `fixed-${randomUUID()}`;
    const specs = keys.map((key) => ({ lockPath: lockPath(base, key), data: Buffer.from(owner, 'utf8') }));
    const perKey = multiCreateBytes(specs.slice(0, 2)) - multiCreateBytes(specs.slice(0, 1));
    // Enough keys of the same shape to pass 4096 bytes, and the largest set below it.
    const many = Array.from({ length: Math.ceil(4096 / perKey) + 1 }, (_, index) => `fit-${index}`);
    await expect(locks.acquireAll(many, { owner })).rejects.toBeInstanceOf(InvalidArgumentError);
    const fitting = many.slice(0, Math.floor((4096 - multiCreateBytes([])) / perKey) - 1);
    const all = await locks.acquireAll(fitting, { owner });
    expect(all.keys).toHaveLength(fitting.length);
    await all.release();
    await locks.close();
  });
});
