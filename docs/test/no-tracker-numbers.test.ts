import { describe, expect, it } from 'vitest';
import { generatedReference, packageReadmes, type Page, sitePages, sourceFiles } from './markdown-files.js';

/**
 * Tracker references: "issue 14", "issues 5 and 6", "Issue #3", "PR 12", and a bare "#14" (not a
 * Markdown heading, not a colour like #1f77b4, not an anchor like (#fencing)).
 */
const trackerReference = /\b(?:issues?|pull requests?|PRs?)\s+#?\d+|(?:^|[\s([,;])#\d+(?![\w-])/i;

/** `file:line: text` for every line of `pages` that names a tracker number. */
function trackerNumbers(pages: Page[]): string[] {
  return pages.flatMap((page) =>
    page.text.split('\n').flatMap((text, index) => (trackerReference.test(text) ? [`${page.name}:${index + 1}: ${text.trim()}`] : [])),
  );
}

/** In source, only the spelled-out forms: a bare `#14` is too common in code to mean a tracker. */
const spelledOutTrackerReference = /\b(?:issues?|pull requests?)\s+#?\d+/i;

describe('no user-facing page names a tracker number', () => {
  it('the pattern catches the forms a tracker number takes, and nothing else', () => {
    const caught = ['fixed in issue 14', 'see issues 5 and 6', 'Issue #3', '(#14)', 'see #5.', 'PR 12', '#7 at the start'];
    const passed = [
      '# Heading',
      '## 2. Second step',
      'color #1f77b4',
      '[link](#fencing)',
      'seed 002',
      'HTTP 409',
      '`#private` field',
      'CURATOR-621 (a Jira key of a library we model)',
    ];
    expect(caught.filter((text) => !trackerReference.test(text))).toEqual([]);
    expect(passed.filter((text) => trackerReference.test(text))).toEqual([]);
    expect(trackerNumbers([{ name: 'control.md', text: 'fine\nsee issue 14\n' }])).toEqual(['control.md:2: see issue 14']);
  });

  it('README.md, the hand-written pages of docs/ and the packages’ READMEs', () => {
    expect(trackerNumbers([...sitePages(), ...packageReadmes()])).toEqual([]);
  });

  it('the generated API reference, docs/api', () => {
    const reference = generatedReference();
    expect(reference.length).toBeGreaterThan(0);
    expect(trackerNumbers(reference)).toEqual([]);
  });

  it('the packages’ source: the doc comments behind the reference, error messages and CLI help', () => {
    const sources = sourceFiles();
    expect(sources.length).toBeGreaterThan(100);
    const hits = sources.flatMap((page) =>
      page.text
        .split('\n')
        .flatMap((text, index) => (spelledOutTrackerReference.test(text) ? [`${page.name}:${index + 1}: ${text.trim()}`] : [])),
    );
    expect(hits).toEqual([]);
    expect(spelledOutTrackerReference.test('// (issue 14)')).toBe(true);
  });
});
