import { InvalidArgumentError } from '@deadbolt/core/adapter';
import { describe, expect, it } from 'vitest';
import { createExamplePgBackend, resolveExamplePgOptions } from '../src/example-pg/index.js';

// Port 1: nothing listens there, and nothing may try. Every check below is made before any I/O.
const url = 'example-pg://deadbolt:pw-S3cr3t@127.0.0.1:1/locks';

describe('example-pg options', () => {
  it('refuses a table name that is not a plain identifier, typed, without echoing the password', () => {
    for (const table of ['locks; DROP TABLE users; --', 'Locks', 'a'.repeat(58), '1locks', '"locks"']) {
      const error = (() => {
        try {
          createExamplePgBackend(url, { table });
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error, table).toBeInstanceOf(InvalidArgumentError);
      expect((error as InvalidArgumentError).argument).toBe('table');
      expect(String(error)).not.toContain('pw-S3cr3t');
    }
  });

  it('refuses unknown parameters and bad numbers, and reads the rest from the URL', () => {
    expect(() => resolveExamplePgOptions(`${url}?tabel=x`)).toThrow(InvalidArgumentError);
    expect(() => resolveExamplePgOptions(`${url}?connections=0`)).toThrow(InvalidArgumentError);
    expect(() => resolveExamplePgOptions(url, { timeoutMs: 1.5 })).toThrow(InvalidArgumentError);
    expect(resolveExamplePgOptions(`${url}?table=my_locks&connections=2`)).toMatchObject({
      host: '127.0.0.1',
      port: 1,
      user: 'deadbolt',
      database: 'locks',
      table: 'my_locks',
      connections: 2,
      timeoutMs: 2_000,
    });
  });
});
