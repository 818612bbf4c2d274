import { createLockClient, UnsupportedOperationError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import '../src/index.js';

// No server needed: the refusals come before any I/O (port 1 is never dialled).
describe('postgres advisory operator API', () => {
  it("refuses forceRelease and list with UnsupportedOperationError naming each: a hold is a session's, pg_locks keeps no names", async () => {
    const client = createLockClient({ url: 'postgres://deadbolt@127.0.0.1:1/deadbolt?mode=advisory' });
    try {
      const forced = await client.forceRelease('stuck').catch((e: unknown) => e);
      expect(forced).toBeInstanceOf(UnsupportedOperationError);
      expect((forced as UnsupportedOperationError).key).toBe('stuck');
      expect((forced as Error).message).toContain("capabilities.operations does not include 'forceRelease'");
      const listed = await client
        .list()
        [Symbol.asyncIterator]()
        .next()
        .catch((e: unknown) => e);
      expect(listed).toBeInstanceOf(UnsupportedOperationError);
      expect((listed as Error).message).toContain("capabilities.operations does not include 'list'");
    } finally {
      await client.close();
    }
  });
});
