import { InvalidArgumentError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import { expirySeconds, memcachedBackendFactory, resolveMemcachedOptions } from '../src/index.js';

describe('options', () => {
  it('parses a host list and timeoutMs; ignores prefix (core consumes it)', () => {
    const options = resolveMemcachedOptions('memcached://a:1,b:2?timeoutMs=500&prefix=x');
    expect(options.servers).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 2 },
    ]);
    expect(options.timeoutMs).toBe(500);
  });
  it('defaults to 127.0.0.1:11211 and 2000 ms', () => {
    const options = resolveMemcachedOptions('memcached://');
    expect(options.servers).toEqual([{ host: '127.0.0.1', port: 11211 }]);
    expect(options.timeoutMs).toBe(2000);
  });
  it.each([
    'memcached://a:1?bogus=1',
    'memcached://a:1?timeoutMs=abc',
    'memcached://a:1?timeoutMs=-1',
    'memcached://a:99999',
    'memcached://user:secret@a:1',
    'redis://a:1',
  ])('rejects %s before any I/O, without echoing secrets', (url) => {
    let caught: unknown;
    try {
      resolveMemcachedOptions(url);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    expect((caught as Error).message).not.toContain('secret');
  });
  it('rejects unknown object options and bad servers', () => {
    expect(() => resolveMemcachedOptions(undefined, { nope: 1 })).toThrow(InvalidArgumentError);
    expect(() => resolveMemcachedOptions(undefined, { servers: [] })).toThrow(InvalidArgumentError);
    expect(() => resolveMemcachedOptions(undefined, { servers: [{ host: 'a', port: 0 }] })).toThrow(InvalidArgumentError);
    expect(() => resolveMemcachedOptions(undefined, { client: {} })).toThrow(InvalidArgumentError);
  });
  it('the factory does no I/O (a server that does not exist is fine until used)', () => {
    const backend = memcachedBackendFactory({ urlText: 'memcached://127.0.0.1:1', options: {} });
    expect(backend.name).toBe('memcached');
    expect(backend.capabilities.minTtlMs).toBe(1000);
  });
  it('expiry rounds up to whole seconds; beyond 30 days it is absolute', () => {
    expect(expirySeconds(1000)).toBe(2);
    expect(expirySeconds(1001)).toBe(3);
    expect(expirySeconds(30_000)).toBe(31);
    expect(expirySeconds(31 * 86_400_000, 1_700_000_000_000)).toBe(1_700_000_000 + 31 * 86_400 + 1);
  });
});
