import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** The published packages (every workspace not marked private), by directory under packages/. */
export const published: readonly string[] = readdirSync(`${repoRoot}packages`)
  .filter((dir) => !(JSON.parse(readFileSync(`${repoRoot}packages/${dir}/package.json`, 'utf8')) as { private?: boolean }).private)
  .sort();

export interface PackedFile {
  readonly path: string;
  readonly size: number;
}

export interface Packed {
  readonly name: string;
  readonly filename: string;
  readonly files: readonly PackedFile[];
}

/** `npm pack` of packages/<dir> (built beforehand by `npm test`'s build): the tarball's name and contents. */
export async function npmPack(dir: string, destination?: string): Promise<Packed> {
  const args = ['pack', '--json', '--ignore-scripts', ...(destination === undefined ? ['--dry-run'] : ['--pack-destination', destination])];
  const { stdout } = await run('npm', args, { cwd: `${repoRoot}packages/${dir}`, maxBuffer: 64 * 1024 * 1024 });
  const [result] = JSON.parse(stdout) as Packed[];
  if (result === undefined) throw new Error(`npm pack printed no result for packages/${dir}`);
  return result;
}
