import { describeLockConformance } from '@deadbolt/conformance';
import { memcachedCommandCount, startMemcached, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import memjs from 'memjs';
import { memcachedCapabilities } from '../src/index.js';
import { encodeKey } from '../src/keys.js';

/** The suite's expireHold: the lock's item goes, as an eviction or a restart would take it. */
async function deleteItem(server: ServerHandle, fullKey: string): Promise<void> {
  const client = memjs.Client.create(`${server.host}:${server.port}`, { retries: 1, logger: { log: () => undefined } });
  try {
    await client.delete(encodeKey(fullKey));
  } finally {
    client.close();
  }
}

/** The shared conformance suite on one memcached server, with every server fault. */
describeLockConformance<ServerHandle>({
  name: 'memcached',
  capabilities: memcachedCapabilities,
  servers: () => startMemcached(),
  create: (server, { prefix }) => createLockClient({ url: server!.url, prefix }),
  proxied: {
    target: (server) => ({ host: server!.host, port: server!.port }),
    create: (server, proxy, { prefix }) => createLockClient({ url: proxy.rewrite(server!.url), prefix }),
  },
  // Each chaos operation is a few round trips; crashes expire in whole seconds.
  chaosOperations: 100,
  commandCount: (server) => memcachedCommandCount(server!.host, server!.port),
  // `<key>\0permits` records a semaphore's permits (permits-record.ts).
  permitsRecorded: true,
  expireHold: (server, fullKey) => deleteItem(server!, fullKey),
  faults: {
    restart: (server) => server.restart(),
    pause: (server) => server.pause(),
    resume: (server) => server.resume(),
    down: (server) => server.down(),
    up: (server) => server.up(),
  },
});
