import { expectRefusedConnection, failedFirstAcquire } from '@deadbolt/conformance';
import { freePort, startPostgres, type ServerHandle } from '@deadbolt/conformance/servers';
import { BackendConfigurationError } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../src/index.js';

// Issue 13: a connection error names the backend, host:port and the system error within the
// connect timeout; a database that does not exist is a configuration error, not an outage.
const password = 'S3cr3tZq7-pw';
let server: ServerHandle;

beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(['advisory', 'lease'])('postgres %s connection errors', (mode) => {
  it('a port nobody listens on: BackendUnavailableError naming host:port and ECONNREFUSED, within the connect timeout', async () => {
    const port = await freePort();
    await expectRefusedConnection(`postgres://app:${password}@127.0.0.1:${port}/db?mode=${mode}&connectTimeoutMs=1000`, {
      backend: 'postgres',
      endpoint: `127.0.0.1:${port}`,
      withinMs: 1000 + 2500,
      secret: password,
    });
  });

  it('a database that does not exist: BackendConfigurationError, not BackendUnavailableError', async () => {
    const url = new URL(server.url);
    url.pathname = '/no_such_database_zq7';
    url.searchParams.set('mode', mode);
    const { error } = await failedFirstAcquire(url.href);
    expect(error).toBeInstanceOf(BackendConfigurationError);
    expect(error.message).toMatch(/database does not exist/);
    expect(error.message).toContain(url.host);
    if (url.password !== '') expect(error.message).not.toContain(decodeURIComponent(url.password));
  });
});
