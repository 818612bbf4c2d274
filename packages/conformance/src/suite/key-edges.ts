import { InvalidArgumentError, type AcquireOptions } from '@deadbolt/core';
import type { ConformanceCase } from './context.js';
import { assert, rejection } from './util.js';

/** Keys that a hashing, truncating or path-mapping adapter could merge, and input that must send nothing. */

export const longKeysDifferAtEnd: ConformanceCase = {
  title: 'two long keys (hundreds of bytes) differing only in their last character are separate locks',
  async run(ctx) {
    const [a, b] = [ctx.client(), ctx.client()];
    const room = ctx.capabilities.maxKeyBytes - Buffer.byteLength(ctx.prefix);
    const stem = 'L'.repeat(Math.min(room, 600) - 1);
    const lock = await a.acquire(`${stem}1`, { waitMs: 0 });
    const other = await b.tryAcquire(`${stem}2`);
    assert(other !== null, `a ${stem.length + 1}-byte key was busy because a key differing in its last character was held`);
    assert((await b.tryAcquire(`${stem}1`)) === null, 'the long key itself was not held');
    await Promise.all([lock.release(), other.release()]);
  },
};

export const separatorKeys: ConformanceCase = {
  title: 'keys differing only by a separator, and prefix + key pairs meeting at it, are separate locks',
  async run(ctx) {
    const [a, b] = [ctx.client(), ctx.client()];
    const colon = await a.acquire('x:y', { waitMs: 0 });
    const slash = await b.tryAcquire('x/y');
    assert(slash !== null, '"x/y" was busy while only "x:y" was held');
    // Full keys "<p>p:a/b" and "<p>p:a:b": one prefix ends where the other's key begins.
    const short = ctx.client(`${ctx.prefix}p:`);
    const long = ctx.client(`${ctx.prefix}p:a:`);
    const first = await short.acquire('a/b', { waitMs: 0 });
    const second = await long.tryAcquire('b');
    assert(second !== null, 'prefix "p:a:" + key "b" was busy while prefix "p:" + key "a/b" was held');
    await Promise.all([colon.release(), slash.release(), first.release(), second.release()]);
  },
};

export const badInputSendsNothing: ConformanceCase = {
  title: 'rejected bad input (NUL, lone surrogate, 1 MB owner, long key, short ttl) sends no command to the server',
  requires: (options) => (options.commandCount ? undefined : 'no commandCount hook (a server-side command counter)'),
  async run(ctx) {
    const client = ctx.client();
    const caps = ctx.capabilities;
    const bad: [string, () => Promise<unknown>][] = [
      ['NUL in the key', () => client.acquire('a\u0000b', { waitMs: 0 })],
      ['lone high surrogate', () => client.acquire('\ud800', { waitMs: 0 })],
      ['lone low surrogate', () => client.tryAcquire('x\udc00')],
      ['1 MB owner', () => client.acquire('k', { owner: 'o'.repeat(1 << 20), waitMs: 0 })],
      ['key over maxKeyBytes', () => client.acquire('x'.repeat(caps.maxKeyBytes + 1), { waitMs: 0 })],
      ['unknown option', () => client.acquire('k', { colour: 'red' } as unknown as AcquireOptions)],
      ...(caps.minTtlMs > 1
        ? [['ttl below minTtlMs', () => client.acquire('k', { ttlMs: caps.minTtlMs - 1, waitMs: 0 })] as [string, () => Promise<unknown>]]
        : []),
    ];
    // What asking costs by itself (INFO is a command too): two counts back to back.
    const probeCost = -((await ctx.commandCount()) - (await ctx.commandCount()));
    const before = await ctx.commandCount();
    for (const [what, call] of bad) {
      let error: unknown;
      try {
        error = await rejection(call());
      } catch (thrown) {
        error = thrown;
      }
      assert(error instanceof InvalidArgumentError, `${what}: expected InvalidArgumentError, got ${String(error)}`);
    }
    const sent = (await ctx.commandCount()) - before - probeCost;
    assert(sent === 0, `rejected input sent ${sent} command(s) to the server`);
  },
};

export const keyEdgeCases: readonly ConformanceCase[] = [longKeysDifferAtEnd, separatorKeys, badInputSendsNothing];
