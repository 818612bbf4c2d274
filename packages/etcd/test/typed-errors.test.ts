import { createServer, type AddressInfo } from 'node:net';
import { etcdRequestCount, startEtcd, type ServerHandle } from '@deadbolt/conformance/servers';
import {
  BackendConfigurationError,
  BackendUnavailableError,
  createLockClient,
  InvalidArgumentError,
  type LockClient,
} from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdBackend } from '../src/index.js';
import { runEtcdctl } from './support.js';

/** A dead endpoint, a refused login and oversized input: each a typed error, in time or before any I/O. */
let server: ServerHandle;
const clients: LockClient[] = [];
const secret = 'etcd-typed-errors-pw';

function client(url: string): LockClient {
  const made = createLockClient({ backend: createEtcdBackend(`${url}?callTimeoutMs=1000&dialTimeoutMs=1000`) });
  clients.push(made);
  return made;
}

/** A loopback port that nothing listens on. */
async function deadPort(): Promise<number> {
  const listener = createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as AddressInfo;
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  server = await startEtcd();
  await runEtcdctl(server.url, ['user', 'add', `root:${secret}`, '--interactive=false']);
  await runEtcdctl(server.url, ['user', 'grant-role', 'root', 'root']);
  await runEtcdctl(server.url, ['auth', 'enable']);
});
afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await server?.stop();
});

describe('etcd: typed errors', () => {
  it('a dead endpoint is a BackendUnavailableError within the deadline, not a hang', async () => {
    const locks = client(`etcd://127.0.0.1:${await deadPort()}`);
    const startedAt = Date.now();
    const error = await locks.acquire('k', { waitMs: 0 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    // The lease grant's deadline (callTimeoutMs) and the guard's margin; far below a hang.
    expect(Date.now() - startedAt).toBeLessThan(5_000);
  });

  it('a refused login is a BackendConfigurationError that does not show the password', async () => {
    const wrong = 'not-the-password';
    const locks = client(`etcd://root:${wrong}@${server.host}:${server.port}`);
    const error = await locks.acquire('k', { waitMs: 0 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BackendConfigurationError);
    expect(String(error)).not.toContain(wrong);
    // The right password on the same server works: it was the credential, not the server.
    const right = client(`etcd://root:${secret}@${server.host}:${server.port}`);
    const lock = await right.acquire('k', { waitMs: 0 });
    await lock.release();
  });

  it('a key or a participant id beyond etcd limits is refused before any I/O', async () => {
    const locks = client(`etcd://root:${secret}@${server.host}:${server.port}`);
    const sent = await etcdRequestCount(server.host, server.port);
    await expect(locks.acquire('k'.repeat(1_025))).rejects.toBeInstanceOf(InvalidArgumentError);
    // etcd refuses a request over 1.5 MiB (--max-request-bytes); a participant id is the key's value.
    const election = locks.elect('too-big', { id: 'x'.repeat(2 * 1024 * 1024) });
    try {
      await expect(election[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(InvalidArgumentError);
    } finally {
      await election.resign();
    }
    expect(await etcdRequestCount(server.host, server.port)).toBe(sent);
  });
});
