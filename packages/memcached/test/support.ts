import { startMemcached, type ServerHandle } from '@deadbolt/conformance/servers';
import memjs from 'memjs';
import { createMemcachedBackend, type MemcachedBackend } from '../src/index.js';

export { startMemcached, type ServerHandle };

/** A raw memjs client on the server, closed by the caller (for protocol-level tests). */
export function rawClient(server: ServerHandle): memjs.Client {
  return memjs.Client.create(`${server.host}:${server.port}`, { retries: 1, timeout: 2, logger: { log: () => undefined } });
}

export function backendFor(server: ServerHandle, timeoutMs = 2_000): MemcachedBackend {
  return createMemcachedBackend({ servers: [{ host: server.host, port: server.port }], timeoutMs });
}

export function request(key: string, owner = 'owner', ttlMs = 10_000) {
  return { key, owner, ttlMs, onLost: () => undefined };
}
