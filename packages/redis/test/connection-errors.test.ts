import { expectNoSecret, expectRefusedConnection, failedFirstAcquire } from '@deadbolt/conformance';
import { freePort, startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { BackendConfigurationError, BackendUnavailableError } from '@deadbolt/core';
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

describe('redis connection errors', () => {
  it('a port nobody listens on: BackendUnavailableError naming host:port and ECONNREFUSED, within the command deadline', async () => {
    const port = await freePort();
    await expectRefusedConnection(`redis://:${password}@127.0.0.1:${port}?commandTimeoutMs=1000`, {
      backend: 'redis',
      endpoint: `127.0.0.1:${port}`,
      withinMs: 1000 + 1500,
      secret: password,
    });
  });

  it('a host that does not resolve: the DNS error and the host', async () => {
    const { error } = await failedFirstAcquire(`redis://:${password}@deadbolt-no-such-host.invalid:6379?commandTimeoutMs=1000`);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect(error.message).toContain('deadbolt-no-such-host.invalid:6379');
    expect(error.message).toMatch(/ENOTFOUND|EAI_AGAIN/);
    expectNoSecret(error, password);
  });

  it('a wrong password: BackendConfigurationError, without the password given or the right one', async () => {
    const url = new URL(server.url);
    const { error } = await failedFirstAcquire(`redis://:wrong-${password}@${url.host}?commandTimeoutMs=1000`);
    expect(error).toBeInstanceOf(BackendConfigurationError);
    expect(error.message).toContain(url.host);
    // The adapter's own classifier says what to fix (the kit alone would repeat the server's reply).
    expect(error.message).toContain('the server refused the username or password (AUTH)');
    expectNoSecret(error, password);
    expect(error.message).not.toContain('wrong-');
  });

  it('no password where the server needs one: BackendConfigurationError saying so', async () => {
    const url = new URL(server.url);
    const { error } = await failedFirstAcquire(`redis://${url.host}?commandTimeoutMs=1000`);
    expect(error).toBeInstanceOf(BackendConfigurationError);
    expect(error.message).toContain('the server requires a password (AUTH) and none was given');
    expectNoSecret(error, password);
  });
});
