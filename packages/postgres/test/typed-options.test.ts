import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import '../src/index.js';

// Type-level checks run in CI through the root tsconfig.test.json (`npm run typecheck`): a wrong
// option type must be a compile error, and the runtime check stays as the backstop for JavaScript.
describe('postgres options are typed by scheme', () => {
  it('a pg.Pool where the pool size goes fails type-checking, and at run time before any I/O', async () => {
    const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    try {
      // @ts-expect-error a pg.Pool is not a pool size (number)
      expect(() => createLockClient({ url: 'postgres://127.0.0.1:1/db', options: { pool } })).toThrow(InvalidArgumentError);
      // @ts-expect-error the same through a backend name
      expect(() => createLockClient({ backend: 'postgres', options: { pool } })).toThrow(/pool/);
      // @ts-expect-error an unknown option name
      expect(() => createLockClient({ url: 'postgresql://127.0.0.1:1/db', options: { poolSize: 5 } })).toThrow(/poolSize/);
      const typed = createLockClient({ url: 'postgres://127.0.0.1:1/db', options: { pool: 5, mode: 'lease', statementTimeoutMs: 500 } });
      await typed.close();
    } finally {
      await pool.end();
    }
  });
});
