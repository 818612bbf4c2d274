import { freePort } from '@deadbolt/conformance/servers';
import { BackendUnavailableError, createLockClient } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import '../src/index.js';

describe('memcached connection errors', () => {
  it('a port nobody listens on: BackendUnavailableError naming host:port and ECONNREFUSED, within the timeout', async () => {
    const port = await freePort();
    const locks = createLockClient({ url: `memcached://127.0.0.1:${port}?timeoutMs=1000`, defaults: { waitMs: 0 } });
    const startedAt = Date.now();
    const error = (await locks.acquire('k').catch((caught: unknown) => caught)) as Error;
    await locks.close();
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(Date.now() - startedAt).toBeLessThan(1000 + 1500);
  });
});
