import { startMemcached, type ServerHandle } from '@deadbolt/conformance/servers';
import { createLockClient } from '@deadbolt/core';
import { describe, it } from 'vitest';
import { memcachedCapabilities } from '../src/index.js';

/**
 * The shared conformance suite on one memcached server. Until @deadbolt/conformance exports the
 * suite (packages/conformance/src/index.ts), this file says so visibly instead of passing silently.
 */
const suitePackage = '@deadbolt/conformance';
const suite = (await import(/* @vite-ignore */ suitePackage).catch(() => undefined)) as
  | { describeLockConformance?: (options: Record<string, unknown>) => void }
  | undefined;

const describeLockConformance = suite?.describeLockConformance;
if (describeLockConformance === undefined) {
  describe('conformance', () => {
    it.skip('the @deadbolt/conformance suite is not built yet (packages/conformance/src/index.ts)', () => undefined);
  });
} else {
  describeLockConformance({
    name: 'memcached',
    capabilities: memcachedCapabilities,
    servers: () => startMemcached(),
    create: (server: ServerHandle, options: { prefix?: string } = {}) => createLockClient({ url: server.url, ...options }),
    faults: {
      restart: (server: ServerHandle) => server.restart(),
      pause: (server: ServerHandle) => server.pause(),
      resume: (server: ServerHandle) => server.resume(),
      down: (server: ServerHandle) => server.down(),
      up: (server: ServerHandle) => server.up(),
    },
  });
}
