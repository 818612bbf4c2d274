import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import { createPostgresBackend, postgresModes, postgresModeTable, resolvePostgresOptions } from '../src/index.js';

// One table drives options parsing, the factory and the README: adding a mode is one entry.
describe('the postgres mode table', () => {
  it('names every mode the URL accepts, builds a backend of that name and capabilities, and the README lists each row', async () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(postgresModes).toEqual(Object.keys(postgresModeTable));
    for (const mode of postgresModes) {
      const entry = postgresModeTable[mode];
      const backend = createPostgresBackend(`postgres://127.0.0.1:1/db?mode=${mode}`);
      expect(backend.name).toBe(`postgres:${mode}`);
      expect(backend.capabilities).toBe(entry.capabilities);
      expect(resolvePostgresOptions(`postgres://127.0.0.1:1/db?mode=${mode}`).pool).toBe(entry.defaultPool);
      await backend.close();
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${mode}\``));
      expect(row, `README row for ${mode}`).toContain(entry.summary);
      for (const option of entry.ownOptions) expect(row).toContain(`\`${option}\``);
    }
    expect(() => resolvePostgresOptions('postgres://h/db?mode=nope')).toThrow(InvalidArgumentError);
  });

  it("refuses an option of another mode before any I/O (lease ignores advisory's namespace)", () => {
    expect(() => resolvePostgresOptions('postgres://h/db?mode=lease&namespace=x')).toThrow(/namespace.*advisory/);
    expect(resolvePostgresOptions('postgres://h/db?mode=advisory&namespace=x').namespace).toBe('x');
  });
});
