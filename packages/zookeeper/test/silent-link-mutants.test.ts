import { runCase, silentLink, type ConformanceOptions } from '@deadbolt/conformance';
import { startZooKeeper, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperBackend, zooKeeperCapabilities } from '../src/index.js';
import { ReadTimeout } from '../src/read-timeout.js';

/**
 * The conformance suite's silent-link case fails on a real adapter with a realistic bug: a ZooKeeper
 * client without a read timeout (node-zookeeper-client as it comes), which never notices that its
 * connection went silent and keeps sending into it. The adapter as built passes the same case in
 * conformance.test.ts (zookeeper standalone, the same client settings).
 */
let server: ServerHandle;

beforeAll(async () => {
  server = await startZooKeeper();
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

const clientOn = (url: string, prefix: string) =>
  createLockClient({
    backend: createZooKeeperBackend(`${url}/deadbolt/silent-mutant?sessionTimeoutMs=6000&connectTimeoutMs=3000&operationTimeoutMs=3000`),
    prefix,
  });

const options: ConformanceOptions<ServerHandle> = {
  name: 'mutant: zookeeper without its read timeout',
  capabilities: zooKeeperCapabilities,
  create: (handle, { prefix }) => clientOn(handle!.url, prefix),
  proxied: {
    target: (handle) => ({ host: handle!.host, port: handle!.port }),
    create: (handle, proxy, { prefix }) => clientOn(proxy.rewrite(handle!.url), prefix),
  },
};

describe('silentLink catches a broken adapter', () => {
  it('a ZooKeeper client that never closes a silent connection fails it', async () => {
    const start = ReadTimeout.prototype.start;
    ReadTimeout.prototype.start = () => undefined;
    try {
      await expect(runCase(silentLink, options, server)).rejects.toThrow(/no tryAcquire got through/);
    } finally {
      ReadTimeout.prototype.start = start;
    }
  }, 90_000);
});
