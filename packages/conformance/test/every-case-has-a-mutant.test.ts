// The suite's own proof rule: every case fails on at least one broken backend. A case no mutant
// test names is a case nobody has seen fail, so this test lists the suite's cases and looks for
// each name in the mutant tests of every package.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as suite from '../src/index.js';

const packagesDir = fileURLToPath(new URL('../..', import.meta.url));

/** The text of every mutant test (a file named *mutant*) of every package. */
function mutantTests(): string {
  const texts: string[] = [];
  for (const pkg of readdirSync(packagesDir)) {
    const testDir = join(packagesDir, pkg, 'test');
    let files: string[];
    try {
      files = readdirSync(testDir);
    } catch {
      continue; // a package without tests
    }
    for (const file of files.filter((name) => /mutant/i.test(name) && name.endsWith('.ts'))) {
      texts.push(readFileSync(join(testDir, file), 'utf8'));
    }
  }
  return texts.join('\n');
}

const isCase = (value: unknown): boolean =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { title?: unknown }).title === 'string' &&
  typeof (value as { run?: unknown }).run === 'function';

describe('every conformance case has a mutant test', () => {
  const cases = Object.entries(suite).filter(([, value]) => isCase(value));

  it('finds the suite cases it checks', () => {
    // Every group's cases are exported: fewer would mean the filter above lost some.
    const inGroups = Object.values(suite.caseGroups).flat().length;
    expect(cases.length).toBe(inGroups);
  });

  it('each case is named by a mutant test', () => {
    const text = mutantTests();
    const unproven = cases.map(([name]) => name).filter((name) => !new RegExp(`\\b${name}\\b`).test(text));
    expect(unproven, `cases no mutant test names (add one to a *mutant*.test.ts): ${unproven.join(', ')}`).toEqual([]);
  });
});
