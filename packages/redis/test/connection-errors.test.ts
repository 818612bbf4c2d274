import { freePort, startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { BackendConfigurationError, BackendUnavailableError, createLockClient } from '@deadbolt/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../src/index.js';

// Issue 13: a connection error names the backend, host:port and the system error, within the
// command deadline; a refused password is a configuration error, not an outage; no password shown.
const password = 'S3cr3tZq7-pw';
let server: ServerHandle;

beforeAll(async () => {
  server = await startRedis();
  // The fixture's readiness probe speaks without AUTH, so the password is set once it is up.
  const admin = new Redis(server.url);
  await admin.config('SET', 'requirepass', password);
  admin.disconnect();
});
afterAll(async () => {
  await server?.stop();
});

async function failure(url: string): Promise<{ error: Error; ms: number }> {
  const locks = createLockClient({ url, defaults: { waitMs: 0 } });
  const startedAt = Date.now();
  try {
    await locks.acquire('k');
    throw new Error('expected a failure');
  } catch (error) {
    return { error: error as Error, ms: Date.now() - startedAt };
  } finally {
    await locks.close();
  }
}

function expectNoPassword(error: Error): void {
  const everything = `${error.message} ${String((error.cause as Error | undefined)?.message)} ${error.stack}`;
  expect(everything).not.toContain(password);
}

describe('redis connection errors', () => {
  it('a port nobody listens on: BackendUnavailableError naming host:port and ECONNREFUSED, within the command deadline', async () => {
    const port = await freePort();
    const { error, ms } = await failure(`redis://:${password}@127.0.0.1:${port}?commandTimeoutMs=1000`);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.message).toContain('redis');
    expect(ms).toBeLessThan(1000 + 1500);
    expectNoPassword(error);
  });

  it('a host that does not resolve: the DNS error and the host', async () => {
    const { error } = await failure(`redis://:${password}@deadbolt-no-such-host.invalid:6379?commandTimeoutMs=1000`);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect(error.message).toContain('deadbolt-no-such-host.invalid:6379');
    expect(error.message).toMatch(/ENOTFOUND|EAI_AGAIN/);
    expectNoPassword(error);
  });

  it('a wrong password: BackendConfigurationError, without the password given or the right one', async () => {
    const url = new URL(server.url);
    const { error } = await failure(`redis://:wrong-${password}@${url.host}?commandTimeoutMs=1000`);
    expect(error).toBeInstanceOf(BackendConfigurationError);
    expect(error.message).toContain(url.host);
    expectNoPassword(error);
    expect(error.message).not.toContain('wrong-');
  });
});
