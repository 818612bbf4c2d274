import { freePort } from '@deadbolt/conformance/servers';
import { BackendUnavailableError, createLockClient } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import '../src/index.js';

describe('zookeeper connection errors', () => {
  it('an ensemble nobody answers for: BackendUnavailableError naming its host:port list, within the connect timeout', async () => {
    const [a, b] = [await freePort(), await freePort()];
    const locks = createLockClient({ url: `zookeeper://127.0.0.1:${a},127.0.0.1:${b}?connectTimeoutMs=1000`, defaults: { waitMs: 0 } });
    const startedAt = Date.now();
    const error = (await locks.acquire('k').catch((caught: unknown) => caught)) as Error;
    await locks.close();
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect(error.message).toContain(`127.0.0.1:${a},127.0.0.1:${b}`);
    expect(Date.now() - startedAt).toBeLessThan(1000 + 2000);
  });
});
