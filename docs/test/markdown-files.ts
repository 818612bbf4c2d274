import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** A Markdown file, named by its path from the repository root (`docs/primitives/mutex.md`). */
export interface Page {
  name: string;
  text: string;
}

function walk(dir: string, skip: (path: string) => boolean, out: string[]): string[] {
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (skip(path)) continue;
    if (entry.isDirectory()) walk(path, skip, out);
    else if (entry.name.endsWith('.md')) out.push(path);
  }
  return out;
}

const generated = (path: string): boolean => {
  const rel = relative(repoRoot, path).split('\\').join('/');
  return rel === 'docs/api' || rel === 'docs/.vitepress' || rel === 'docs/test' || rel.endsWith('node_modules');
};

function read(paths: string[]): Page[] {
  return paths.sort().map((path) => ({ name: relative(repoRoot, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }));
}

/** README.md and every hand-written page of the site (docs/**, without the generated reference). */
export function sitePages(): Page[] {
  return read([join(repoRoot, 'README.md'), ...walk(join(repoRoot, 'docs'), generated, [])]);
}

/** Every package's README.md. */
export function packageReadmes(): Page[] {
  const packages = join(repoRoot, 'packages');
  return read(
    readdirSync(packages)
      .map((name) => join(packages, name, 'README.md'))
      .filter((path) => existsSync(path)),
  );
}

/** The API reference TypeDoc writes into docs/api (empty before `npm run docs:build`). */
export function generatedReference(): Page[] {
  return read(walk(join(repoRoot, 'docs', 'api'), () => false, []));
}
