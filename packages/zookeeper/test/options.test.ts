import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '@deadbolt/core';
import { encodeKey, lockPath, contenders, resolveZooKeeperOptions } from '../src/index.js';

describe('zookeeper options (no I/O)', () => {
  it('parses a host list, base path and query parameters; prefix is left to core', () => {
    const options = resolveZooKeeperOptions('zookeeper://a:2181,b:2182,c/base/path?sessionTimeoutMs=4000&connectTimeoutMs=300&prefix=x');
    expect(options).toMatchObject({
      connectString: 'a:2181,b:2182,c:2181',
      basePath: '/base/path',
      sessionTimeoutMs: 4000,
      connectTimeoutMs: 300,
    });
    expect(resolveZooKeeperOptions('zookeeper://a:1').basePath).toBe('/deadbolt/locks');
    expect(resolveZooKeeperOptions('zookeeper://a:1', { chroot: '/apps/billing' }).basePath).toBe('/apps/billing/deadbolt/locks');
    expect(resolveZooKeeperOptions('zookeeper://a:1/', { basePath: '/' }).basePath).toBe('');
    expect(resolveZooKeeperOptions('zookeeper://a:1').parentCleanupDelayMs).toBe(1000);
    expect(resolveZooKeeperOptions('zookeeper://a:1?parentCleanupDelayMs=0').parentCleanupDelayMs).toBe(0);
  });

  it('rejects unknown parameters, bad numbers, bad paths and unknown object options', () => {
    for (const bad of [
      'zookeeper://a:1?bogus=1',
      'zookeeper://a:1?sessionTimeoutMs=-5',
      'zookeeper://a:1?parentCleanupDelayMs=-1',
      'zookeeper://a:1?parentCleanupDelayMs=1.5',
      'zookeeper://a:1/x//y',
      'zookeeper://a:99999',
      'zookeeper://',
      'zookeeper://u:p@a:1',
    ]) {
      expect(() => resolveZooKeeperOptions(bad), bad).toThrow(InvalidArgumentError);
    }
    expect(() => resolveZooKeeperOptions(undefined, { connectString: 'a:1', nope: 1 })).toThrow(InvalidArgumentError);
    expect(() => resolveZooKeeperOptions(undefined, { connectString: 'a:1', lostOn: 'never' })).toThrow(InvalidArgumentError);
    expect(() => resolveZooKeeperOptions(undefined, { connectString: 'a:1', chroot: 'relative' })).toThrow(InvalidArgumentError);
  });

  it('maps keys to one path segment, injectively; ordinary keys map to themselves', () => {
    expect(lockPath('/base', 'orders:42')).toBe('/base/orders:42');
    expect(encodeKey('a/b')).toBe('a%2Fb');
    expect(encodeKey('a%2Fb')).toBe('a%252Fb');
    expect(encodeKey('..')).toBe('%2E%2E');
    expect(encodeKey('tab\there')).toBe('tab%09here');
  });

  it("orders contenders like Curator's StandardLockInternalsDriver (sequence after the last 'lock-')", () => {
    const children = ['_c_bbb-lock-0000000003', 'not-a-contender', 'lock-0000000001', '_c_aaa-lock-0000000002'];
    expect(contenders(children)).toEqual(['lock-0000000001', '_c_aaa-lock-0000000002', '_c_bbb-lock-0000000003']);
  });
});
