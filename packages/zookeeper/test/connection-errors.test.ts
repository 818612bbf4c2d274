import { expectRefusedConnection } from '@deadbolt/conformance';
import { freePort } from '@deadbolt/conformance/servers';
import { describe, it } from 'vitest';
import '../src/index.js';

describe('zookeeper connection errors', () => {
  it('an ensemble nobody answers for: BackendUnavailableError naming its host:port list, within the connect timeout', async () => {
    const [a, b] = [await freePort(), await freePort()];
    await expectRefusedConnection(`zookeeper://127.0.0.1:${a},127.0.0.1:${b}?connectTimeoutMs=1000`, {
      backend: 'zookeeper',
      endpoint: `127.0.0.1:${a},127.0.0.1:${b}`,
      withinMs: 1000 + 2000,
      systemError: false,
    });
  });
});
