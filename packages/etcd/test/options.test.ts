import { inspect } from 'node:util';
import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import { contenderKey, contendersPrefix, createEtcdBackend, leaseHex, resolveEtcdOptions } from '../src/index.js';

const secret = 'S3cr3t-etcd-pw';

describe('etcd options (no I/O)', () => {
  it('parses a host list, TLS, credentials, a namespace and the timeouts; prefix is left to core', () => {
    const options = resolveEtcdOptions(
      `etcds://root:${secret}@a:2379,b:2380,c/apps/billing?dialTimeoutMs=300&callTimeoutMs=400&sessionTtlMs=2500&prefix=x`,
    );
    expect(options).toMatchObject({
      hosts: [
        { host: 'a', port: 2379 },
        { host: 'b', port: 2380 },
        { host: 'c', port: 2379 },
      ],
      tls: true,
      username: 'root',
      password: secret,
      namespace: 'apps/billing/',
      dialTimeoutMs: 300,
      callTimeoutMs: 400,
      // etcd leases count whole seconds: 2.5 s is granted as 3 s.
      sessionTtlSeconds: 3,
    });
    expect(resolveEtcdOptions('etcd://a')).toMatchObject({ tls: false, namespace: '', username: undefined, sessionTtlSeconds: 10 });
    expect(resolveEtcdOptions('etcd://a', { callTimeoutMs: 50, namespace: 'ns/' })).toMatchObject({ callTimeoutMs: 50, namespace: 'ns/' });
  });

  it('rejects bad input with InvalidArgumentError before any I/O', () => {
    for (const bad of [
      'etcd://a?bogus=1',
      'etcd://a?callTimeoutMs=-5',
      'etcd://a?dialTimeoutMs=1.5',
      'etcd://a?sessionTtlMs=999',
      'etcd://a:99999',
      'etcd://',
      'etcd://onlyuser@a',
      'http://a:2379',
      'etcd://a?callTimeoutMs=1&callTimeoutMs=2',
    ]) {
      expect(() => resolveEtcdOptions(bad), bad).toThrow(InvalidArgumentError);
    }
    expect(() => resolveEtcdOptions(undefined, { hosts: 'a', nope: 1 })).toThrow(InvalidArgumentError);
    expect(() => resolveEtcdOptions(undefined, { hosts: 'a', tls: 'yes' })).toThrow(InvalidArgumentError);
    expect(() => resolveEtcdOptions(undefined, { hosts: 'a', username: 'u' })).toThrow(InvalidArgumentError);
    expect(() => resolveEtcdOptions(undefined, {})).toThrow(InvalidArgumentError);
  });

  it('never shows the password: not in an error about the URL, not in the backend or client', async () => {
    const errors: unknown[] = [];
    for (const bad of [`etcd://root:${secret}@a?bogus=1`, `etcd://root:${secret}@a:99999`, `etcd://root:${secret}@a/x#y`]) {
      try {
        resolveEtcdOptions(bad);
      } catch (error) {
        errors.push(error);
      }
    }
    expect(errors).toHaveLength(3);
    for (const error of errors) {
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(`${inspect(error, { depth: 10, showHidden: true })} ${String(error)}`).not.toContain(secret);
    }
    const backend = createEtcdBackend(`etcd://root:${secret}@127.0.0.1:1`);
    const client = createLockClient({ backend });
    expect(
      `${inspect(backend, { depth: 10, showHidden: true })} ${inspect(client, { depth: 10 })} ${JSON.stringify(backend.endpoint)}`,
    ).not.toContain(secret);
    await client.close();
  });

  it('loads by scheme through createLockClient, for etcd:// and etcds://', async () => {
    for (const url of ['etcd://127.0.0.1:1', 'etcds://127.0.0.1:1']) {
      const client = createLockClient({ url });
      await client.close();
    }
  });

  it('lays keys out as Go does: <name>/<lease id in hex>; a name with "/" or "%" is encoded so no prefix holds another', () => {
    expect(leaseHex('7587869938223421738')).toBe('694d8781adac192a');
    expect(contendersPrefix('', 'jobs')).toBe('jobs/');
    expect(contendersPrefix('ns/', 'jobs')).toBe('ns/jobs/');
    expect(contendersPrefix('', 'a/b')).toBe('a%2Fb/');
    expect(contendersPrefix('', '50%/x')).toBe('50%25%2Fx/');
    expect(contenderKey('jobs/', '255', 0)).toBe('jobs/ff');
    expect(contenderKey('jobs/', '255', 2)).toBe('jobs/ff_2');
  });
});
