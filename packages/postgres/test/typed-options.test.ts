import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import '../src/index.js';

// Type-level checks run in CI through the root tsconfig.test.json (`npm run typecheck`): a wrong
// option type must be a compile error, and the runtime check stays as the backstop for JavaScript.
describe('postgres options are typed by scheme', () => {
  it("the app's pg.Pool type-checks as `pool` (lease mode); wrong types and unknown names do not, and fail before any I/O", async () => {
    const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    try {
      await createLockClient({ url: 'postgres://127.0.0.1:1/db?mode=lease', options: { pool } }).close();
      // @ts-expect-error a pool size is a number (or a pg.Pool), not a string
      expect(() => createLockClient({ url: 'postgres://127.0.0.1:1/db', options: { pool: 'five' } })).toThrow(InvalidArgumentError);
      // @ts-expect-error the same through a backend name
      expect(() => createLockClient({ backend: 'postgres', options: { statementTimeoutMs: '2s' } })).toThrow(/statementTimeoutMs/);
      // @ts-expect-error an unknown option name
      expect(() => createLockClient({ url: 'postgresql://127.0.0.1:1/db', options: { poolSize: 5 } })).toThrow(/poolSize/);
      const typed = createLockClient({ url: 'postgres://127.0.0.1:1/db', options: { pool: 5, mode: 'lease', statementTimeoutMs: 500 } });
      await typed.close();
    } finally {
      await pool.end();
    }
  });
});
