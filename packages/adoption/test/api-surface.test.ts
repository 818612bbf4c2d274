import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { published, repoRoot } from './pack.js';

/**
 * The public surface of every published entry point, one reviewed file per package under api/:
 * each exported name with what it is. A change to an export shows up as a diff of that file, so
 * the surface changes only on purpose (`npx vitest run test/api-surface.test.ts -u` accepts it).
 * Read from the built declarations, which are what users compile against.
 */
function entryPoints(dir: string): [string, string][] {
  const manifest = JSON.parse(readFileSync(`${repoRoot}packages/${dir}/package.json`, 'utf8')) as {
    name: string;
    exports: Record<string, string | { types?: string }>;
  };
  return Object.entries(manifest.exports)
    .filter((entry): entry is [string, { types: string }] => typeof entry[1] === 'object' && entry[1].types !== undefined)
    .map(([subpath, target]) => [`${manifest.name}${subpath.slice(1)}`, `${repoRoot}packages/${dir}/${target.types}`]);
}

function kindOf(symbol: ts.Symbol, checker: ts.TypeChecker): string {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const f = target.flags;
  if (f & ts.SymbolFlags.Class) return 'class';
  if (f & ts.SymbolFlags.Function) return 'function';
  if (f & ts.SymbolFlags.Enum) return 'enum';
  if (f & ts.SymbolFlags.Variable) return 'const';
  if (f & ts.SymbolFlags.Interface) return 'interface';
  if (f & ts.SymbolFlags.TypeAlias) return 'type';
  return 'other';
}

function surface(dir: string, program: ts.Program): string {
  const entries = entryPoints(dir);
  const checker = program.getTypeChecker();
  const lines: string[] = [];
  for (const [name, file] of entries) {
    const source = program.getSourceFile(file);
    const moduleSymbol = source && checker.getSymbolAtLocation(source);
    if (!moduleSymbol) throw new Error(`${file} is not built or not a module: run npx tsc -b`);
    lines.push(`## ${name}`, '');
    for (const symbol of checker.getExportsOfModule(moduleSymbol).sort((a, b) => a.name.localeCompare(b.name))) {
      lines.push(`- ${kindOf(symbol, checker)} ${symbol.name}`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

describe('public API surface', () => {
  let program: ts.Program;
  beforeAll(() => {
    // One program for every entry point: the declarations are parsed once.
    const files = published.flatMap((dir) => entryPoints(dir).map(([, file]) => file));
    const options = {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      noEmit: true,
      skipLibCheck: true,
    };
    program = ts.createProgram(files, options);
  });

  it.each(published)('packages/%s matches its api/<package>.api.md', async (dir) => {
    await expect(surface(dir, program)).toMatchFileSnapshot(`../api/${dir}.api.md`);
  });
});
