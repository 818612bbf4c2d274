import { createLockClient, UnsupportedOperationError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import '../src/index.js';

// No server needed: the refusal comes from the capabilities, before any I/O (port 1 is never dialled).
describe('memcached election', () => {
  it('is refused with UnsupportedOperationError: memcached has no term the server could enforce', async () => {
    const client = createLockClient({ url: 'memcached://127.0.0.1:1' });
    try {
      const election = client.elect('scheduler', { id: 'node-a' });
      const error = await election[Symbol.asyncIterator]()
        .next()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnsupportedOperationError);
      expect((error as UnsupportedOperationError).backend).toBe('memcached');
      expect((error as UnsupportedOperationError).key).toBe('scheduler');
      await expect(election.leader()).rejects.toBeInstanceOf(UnsupportedOperationError);
    } finally {
      await client.close();
    }
  });
});
