import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import { createRedisBackend, parseRedisUrl, resolveRedisOptions } from '../src/index.js';

describe('redis options', () => {
  it('parses a full URL: credentials, several nodes, db, mode and numbers', () => {
    const options = resolveRedisOptions(
      'redis://user:p%40ss@h1:7001,h2:7002,[::1]:7003/0?mode=redlock&commandTimeoutMs=750&driftFactor=0.02&nodeTimeoutMs=40',
    );
    expect(options.mode).toBe('redlock');
    expect(options.nodes).toEqual([
      { host: 'h1', port: 7001 },
      { host: 'h2', port: 7002 },
      { host: '::1', port: 7003 },
    ]);
    expect(options).toMatchObject({
      username: 'user',
      password: 'p@ss',
      commandTimeoutMs: 750,
      driftFactor: 0.02,
      nodeTimeoutMs: 40,
      cluster: false,
      tls: false,
    });
    expect(Object.isFrozen(options)).toBe(true);
  });

  it('defaults: setnx, 127.0.0.1:6379, 2 s command deadline; several nodes outside redlock mean a Cluster', () => {
    expect(resolveRedisOptions('redis://')).toMatchObject({
      mode: 'setnx',
      nodes: [{ host: '127.0.0.1', port: 6379 }],
      commandTimeoutMs: 2_000,
    });
    expect(resolveRedisOptions('rediss://h:1/3')).toMatchObject({ tls: true, db: 3, cluster: false });
    expect(resolveRedisOptions('redis://a:1,b:2,c:3').cluster).toBe(true);
    expect(resolveRedisOptions(undefined, { nodes: ['a:1'], cluster: true }).cluster).toBe(true);
  });

  it('Sentinel: redis+sentinel:// or ?sentinel= names the master; the nodes are Sentinels (default port 26379), never a Cluster', () => {
    expect(resolveRedisOptions('redis+sentinel://s1,s2:5000/2?sentinel=main&mode=fair')).toMatchObject({
      sentinel: 'main',
      mode: 'fair',
      db: 2,
      cluster: false,
      nodes: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 5000 },
      ],
    });
    expect(resolveRedisOptions('redis://s1:26380?sentinel=main')).toMatchObject({ sentinel: 'main', nodes: [{ host: 's1', port: 26380 }] });
    expect(resolveRedisOptions(undefined, { sentinel: 'main', sentinelPassword: 'x' })).toMatchObject({
      nodes: [{ host: '127.0.0.1', port: 26379 }],
      sentinelPassword: 'x',
    });
    expect(() => resolveRedisOptions('redis+sentinel://s1')).toThrow(InvalidArgumentError);
    expect(() => resolveRedisOptions('redis://s1?sentinel=main&mode=redlock')).toThrow(InvalidArgumentError);
    expect(() => resolveRedisOptions('redis://s1?sentinel=main&cluster=true')).toThrow(InvalidArgumentError);
  });

  it('object options override the URL; prefix is left to core', () => {
    const options = resolveRedisOptions(new URL('redis://h:1?mode=setnx&prefix=app:'), { mode: 'hash-reentrant' });
    expect(options.mode).toBe('hash-reentrant');
  });

  it.each([
    ['redis://h:1?mode=nope', 'mode'],
    ['redis://h:1?bogus=1', 'URL parameter "bogus"'],
    ['redis://h:1?commandTimeoutMs=-5', 'commandTimeoutMs'],
    ['redis://h:1?commandTimeoutMs=abc', 'commandTimeoutMs'],
    ['redis://h:1?driftFactor=0.9&mode=redlock', 'driftFactor'],
    ['redis://h:99999', 'nodes'],
    ['redis://h:1/x', 'db'],
    ['redis://h:1?cluster=maybe', 'cluster'],
    ['redis://a:1,b:2?mode=redlock&cluster=true', 'cluster'],
    ['memcached://h:1', 'url'],
  ])('rejects %s before any I/O', (url, argument) => {
    expect(() => resolveRedisOptions(url)).toThrow(InvalidArgumentError);
    try {
      resolveRedisOptions(url);
    } catch (error) {
      expect((error as InvalidArgumentError).argument).toBe(argument);
    }
  });

  it('rejects unknown object options and wrong types', () => {
    expect(() => createRedisBackend({ mode: 'setnx', colour: 'red' } as never)).toThrow(InvalidArgumentError);
    expect(() => resolveRedisOptions(undefined, { nodes: [] })).toThrow(InvalidArgumentError);
    expect(() => resolveRedisOptions(undefined, { now: 5 })).toThrow(InvalidArgumentError);
    expect(() => resolveRedisOptions(undefined, { client: {} })).toThrow(InvalidArgumentError);
  });

  it.each(['redis://user:hunter2@h:1 2', 'redis://user:hun/ter@2@h:1 2'])('never echoes the password of a malformed URL (%#)', (url) => {
    expect(() => parseRedisUrl(url)).toThrow(InvalidArgumentError);
    try {
      parseRedisUrl(url);
    } catch (error) {
      expect(String(error)).not.toMatch(/hunter2|hun\/ter/);
    }
  });

  it('createLockClient resolves redis:// and rediss:// through the registry, with no connection until first use', async () => {
    // Port 1 is never served: constructing must not fail, because nothing connects yet.
    const client = createLockClient('redis://127.0.0.1:1?mode=hash-reentrant');
    expect((await client.capabilities()).reentrant).toBe('server');
    await client.close();
    expect(() => createLockClient('redis://127.0.0.1:1?mode=bad')).toThrow(InvalidArgumentError);
  });

  it('names the backend by mode and uses the deadbolt: prefix by default', async () => {
    const getset = createRedisBackend({ mode: 'getset', nodes: ['127.0.0.1:1'] });
    const setnx = createRedisBackend({ mode: 'setnx', nodes: ['127.0.0.1:1'] });
    expect(getset.name).toBe('redis:getset');
    expect(getset.defaultPrefix).toBe('deadbolt:');
    expect(getset.waitForChange).toBeUndefined();
    expect(setnx.waitForChange).toBeTypeOf('function');
    await Promise.all([getset.close(), setnx.close()]);
  });
});
