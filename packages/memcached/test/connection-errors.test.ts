import { expectRefusedConnection } from '@deadbolt/conformance';
import { freePort } from '@deadbolt/conformance/servers';
import { describe, it } from 'vitest';
import '../src/index.js';

describe('memcached connection errors', () => {
  it('a port nobody listens on: BackendUnavailableError naming host:port and ECONNREFUSED, within the timeout', async () => {
    const port = await freePort();
    await expectRefusedConnection(`memcached://127.0.0.1:${port}?timeoutMs=1000`, {
      backend: 'memcached',
      endpoint: `127.0.0.1:${port}`,
      withinMs: 1000 + 1500,
    });
  });
});
