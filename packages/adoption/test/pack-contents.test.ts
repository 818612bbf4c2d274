import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { npmPack, published, repoRoot } from './pack.js';

interface Manifest {
  name: string;
  license?: string;
  repository?: { url?: string; directory?: string };
  homepage?: string;
  bugs?: { url?: string };
  keywords?: string[];
  publishConfig?: { access?: string };
  private?: boolean;
  exports?: Record<string, string | Record<string, string>>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

const manifest = (dir: string): Manifest => JSON.parse(readFileSync(`${repoRoot}packages/${dir}/package.json`, 'utf8')) as Manifest;

describe.each(published)('the published package in packages/%s', (dir) => {
  it('ships its built entry points, declarations, README and LICENSE, and no tests, build state or configs', async () => {
    const packed = await npmPack(dir);
    const paths = packed.files.map((file) => file.path);
    for (const required of ['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts'])
      expect(paths, required).toContain(required);
    for (const target of Object.values(manifest(dir).exports ?? {})) {
      for (const file of typeof target === 'string' ? [target] : Object.values(target))
        expect(paths, file).toContain(file.replace(/^\.\//, ''));
    }
    const unwanted = paths.filter((path) =>
      /(^|\/)(test|tests|fixtures)\/|\.test\.|tsbuildinfo|^tsconfig|vitest\.config|node_modules/.test(path),
    );
    expect(unwanted).toEqual([]);
    expect(readFileSync(`${repoRoot}packages/${dir}/LICENSE`, 'utf8')).toBe(readFileSync(`${repoRoot}LICENSE`, 'utf8'));
  });

  it('says where it comes from, how it is licensed and that it is public', () => {
    const pkg = manifest(dir);
    expect(pkg.private).toBeUndefined();
    expect(pkg.license).toBe('MIT');
    expect(pkg.repository?.url).toMatch(/^git\+https:\/\//);
    expect(pkg.repository?.directory).toBe(`packages/${dir}`);
    expect(pkg.homepage).toMatch(/^https:\/\//);
    expect(pkg.bugs?.url).toMatch(/^https:\/\//);
    expect(pkg.keywords?.length).toBeGreaterThan(0);
    expect(pkg.publishConfig?.access).toBe('public');
  });

  it('loads for require() as well as import: every export has a default condition, none is import-only', () => {
    for (const [subpath, target] of Object.entries(manifest(dir).exports ?? {})) {
      if (typeof target === 'string') continue;
      expect(Object.keys(target), subpath).toContain('default');
      expect(Object.keys(target), subpath).not.toContain('import');
    }
  });

  it('takes @deadbolt/core and @opentelemetry/api as peers (one copy shared with the app), never as dependencies', () => {
    const pkg = manifest(dir);
    for (const shared of ['@deadbolt/core', '@opentelemetry/api', 'ioredis', 'pg', 'vitest', 'tsyringe', 'reflect-metadata']) {
      expect(pkg.dependencies?.[shared], shared).toBeUndefined();
    }
    if (dir === 'core') expect(pkg.peerDependencies?.['@opentelemetry/api']).toMatch(/^\^1\./);
    else expect(pkg.peerDependencies?.['@deadbolt/core']).toMatch(/^\^/);
  });
});
