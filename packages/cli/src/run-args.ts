import { parseArgs } from 'node:util';
import { parseMs } from './durations.js';
import { defaults, runUsage } from './help.js';
import { commonOptions, usageErrorOf } from './parse.js';
import { UsageError } from './usage-error.js';

export interface RunArgs {
  readonly help: false;
  readonly url: string | undefined;
  readonly key: string;
  readonly ttlMs: number;
  readonly waitMs: number;
  readonly graceMs: number;
  /** The command and its arguments, everything after `--`, passed on untouched. */
  readonly command: readonly string[];
}

/**
 * `run <key> [options] -- <command...>`. The `--` is required: the command's own flags are never
 * read as deadbolt's, whatever they are.
 */
export function parseRunArgs(argv: readonly string[]): RunArgs | { readonly help: true } {
  const separator = argv.indexOf('--');
  const own = separator === -1 ? [...argv] : argv.slice(0, separator);
  const command = separator === -1 ? [] : argv.slice(separator + 1);
  const { values, positionals } = (() => {
    try {
      return parseArgs({
        args: own,
        options: { ...commonOptions, ttl: { type: 'string' }, wait: { type: 'string' }, grace: { type: 'string' } },
        strict: true,
        allowPositionals: true,
      });
    } catch (error) {
      throw usageErrorOf(error, runUsage);
    }
  })();
  if (values.help === true) return { help: true };
  const [key, ...extra] = positionals;
  if (key === undefined || key === '') throw new UsageError('missing the lock key', runUsage);
  if (separator === -1) {
    throw new UsageError(
      extra.length > 0 ? `put -- before the command: deadbolt run ${key} -- ${extra.join(' ')}` : 'missing -- and the command to run',
      runUsage,
    );
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}" before --: the key is "${key}"`, runUsage);
  if (command.length === 0 || command[0] === '') throw new UsageError('no command after --', runUsage);
  return {
    help: false,
    url: values.url,
    key,
    ttlMs: parseMs('ttl', values.ttl, defaults.ttlMs, runUsage),
    waitMs: parseMs('wait', values.wait, defaults.waitMs, runUsage, 0),
    graceMs: parseMs('grace', values.grace, defaults.graceMs, runUsage, 0),
    command,
  };
}
