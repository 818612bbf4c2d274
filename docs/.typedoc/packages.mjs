// The public entry points the API reference documents: every subpath a documented package exports,
// read from its package.json, so the reference follows the exports and not the source layout.
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const documentedPackages = ['core', 'redis', 'postgres', 'zookeeper', 'etcd', 'memcached', 'fence', 'schedule'];

/** [{ name: '@deadbolt/core/adapter', file: 'packages/core/dist/adapter/index.d.ts' }, ...] */
export function entryPoints() {
  const entries = [];
  for (const dir of documentedPackages) {
    const pkg = JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8'));
    for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
      if (typeof target !== 'object' || !target.types) continue;
      const name = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
      entries.push({ name, file: relative(root, join(root, 'packages', dir, target.types)) });
    }
  }
  return entries;
}
