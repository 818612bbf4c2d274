import { beforeAll, describe, expect, it } from 'vitest';
import { type Page, sitePages } from './markdown-files.js';
import { compileSamples, samplesOf } from './samples.js';

/** A page with one broken sample (line 6 passes a string where a number belongs) and a bash block. */
const brokenPage: Page = {
  name: 'docs/broken-control.md',
  text: [
    '# A page',
    '',
    '```ts',
    "import { createLockClient } from '@deadbolt/core';",
    "const locks = createLockClient('memory://');",
    "await locks.acquire('k', { ttlMs: '30 s' });",
    '```',
    '',
    '```bash',
    'not typescript: never compiled',
    '```',
  ].join('\n'),
};

describe('the TypeScript samples of README.md and docs/', () => {
  const pages = sitePages();
  let problems: string[] = [];
  // One program for every page and the control page: it costs one load of the packages' types.
  beforeAll(() => {
    problems = compileSamples([...pages, brokenPage]);
  });

  it('compile against the packages users install', () => {
    expect(pages.flatMap(samplesOf).length).toBeGreaterThan(20);
    expect(problems.filter((problem) => !problem.startsWith(`${brokenPage.name}:`))).toEqual([]);
  });

  it('a broken sample fails at its page and line', () => {
    const control = problems.filter((problem) => problem.startsWith(`${brokenPage.name}:`));
    expect(control).toHaveLength(1);
    expect(control[0]).toMatch(/^docs\/broken-control\.md:6:\d+ TS2322 /);
  });
});
