import { createLockClient, UnsupportedOperationError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import '../src/index.js';

// No server needed: the refusal comes before any I/O (port 1 is never dialled).
describe('memcached list', () => {
  it("is refused with UnsupportedOperationError naming 'list': memcached cannot enumerate its keys", async () => {
    const client = createLockClient({ url: 'memcached://127.0.0.1:1' });
    try {
      const error = await client
        .list()
        [Symbol.asyncIterator]()
        .next()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnsupportedOperationError);
      expect((error as UnsupportedOperationError).backend).toBe('memcached');
      expect((error as Error).message).toContain("capabilities.operations does not include 'list'");
    } finally {
      await client.close();
    }
  });
});
