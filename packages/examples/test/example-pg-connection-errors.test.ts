import { expectNoSecret, expectRefusedConnection, failedFirstAcquire } from '@deadbolt/conformance';
import { freePort, startPostgres, type PostgresServerHandle } from '@deadbolt/conformance/servers';
import { BackendConfigurationError } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../src/example-pg/index.js';
import { examplePgUrl } from './example-pg-hooks.js';

// A dead server is an outage (BackendUnavailableError within the deadline), a wrong password or
// database a configuration error; neither message carries the password.
let server: PostgresServerHandle;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

describe('example-pg connection errors', () => {
  it('a port nobody listens on: BackendUnavailableError naming host:port and ECONNREFUSED, within the deadline', async () => {
    const port = await freePort();
    await expectRefusedConnection(`example-pg://app:pw-S3cr3t@127.0.0.1:${port}/db?timeoutMs=1000`, {
      backend: 'example-pg',
      endpoint: `127.0.0.1:${port}`,
      withinMs: 1000 + 2500,
      secret: 'pw-S3cr3t',
    });
  });

  it('a wrong password and a database that does not exist: BackendConfigurationError saying which', async () => {
    const wrong = new URL(server.url);
    wrong.password = 'not-the-pw-S3cr3t';
    const password = await failedFirstAcquire(examplePgUrl(server, wrong.href));
    expect(password.error).toBeInstanceOf(BackendConfigurationError);
    expect(password.error.message).toMatch(/authentication failed/);
    expectNoSecret(password.error, 'not-the-pw-S3cr3t');
    const missing = new URL(server.url);
    missing.pathname = '/no_such_database_zq7';
    const database = await failedFirstAcquire(examplePgUrl(server, missing.href));
    expect(database.error).toBeInstanceOf(BackendConfigurationError);
    expect(database.error.message).toMatch(/database does not exist/);
    expectNoSecret(database.error, server.password);
  });
});
