import { dirname, join } from 'node:path';
import ts from 'typescript';
import { type Page, repoRoot } from './markdown-files.js';

/** One fenced ```ts block: where it starts (the line of its first code line, 1-based) and its code. */
export interface Sample {
  page: string;
  line: number;
  code: string;
}

/** The ```ts (or ```typescript) blocks of a page. Other languages (bash, text, json) are not compiled. */
export function samplesOf(page: Page): Sample[] {
  const samples: Sample[] = [];
  const lines = page.text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(ts|typescript)\b/.exec(lines[i] ?? '');
    if (!open) continue;
    const fence = open[2] ?? '```';
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !(lines[j] ?? '').trimStart().startsWith(fence); j++) body.push(lines[j] ?? '');
    samples.push({ page: page.name, line: i + 2, code: body.join('\n') });
    i = j;
  }
  return samples;
}

/**
 * Compiles every sample of `pages` as one program, each sample a module of its own, against the
 * packages as users import them (`@deadbolt/core` resolves to the built declaration files) and the
 * declarations in `sample-prelude.d.ts` (the application's own names a sample calls, such as
 * `chargeCard`). Returns one line per error, `page:line:column message`, in the page's own lines.
 */
export function compileSamples(pages: Page[]): string[] {
  const samples = pages.flatMap(samplesOf);
  const virtualDir = join(repoRoot, 'docs', '.samples');
  const byFile = new Map<string, Sample>();
  samples.forEach((sample, index) => {
    byFile.set(join(virtualDir, `sample-${index}.mts`), sample);
  });
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    experimentalDecorators: true,
    types: ['node'],
    typeRoots: [join(repoRoot, 'node_modules', '@types')],
  };
  const host = ts.createCompilerHost(options, true);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (file) => byFile.has(file) || fileExists.call(host, file);
  host.readFile = (file) => byFile.get(file)?.code ?? readFile.call(host, file);
  host.getSourceFile = (file, language, onError, create) => {
    const sample = byFile.get(file);
    if (sample) return ts.createSourceFile(file, sample.code, language, true);
    return getSourceFile.call(host, file, language, onError, create);
  };
  host.getCurrentDirectory = () => repoRoot;
  const prelude = join(dirname(new URL(import.meta.url).pathname), 'sample-prelude.d.ts');
  const program = ts.createProgram([prelude, ...byFile.keys()], options, host);
  const problems: string[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const file = diagnostic.file?.fileName;
    const sample = file === undefined ? undefined : byFile.get(file);
    if (!sample || !diagnostic.file || diagnostic.start === undefined) {
      problems.push(`${file ?? 'options'}: TS${diagnostic.code} ${message}`);
      continue;
    }
    const at = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    problems.push(`${sample.page}:${sample.line + at.line}:${at.character + 1} TS${diagnostic.code} ${message}`);
  }
  return problems;
}
