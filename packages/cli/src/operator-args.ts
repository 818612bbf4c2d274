import { parseArgs } from 'node:util';
import { parseMs } from './durations.js';
import { defaults, inspectUsage, lastRunUsage, listUsage, releaseUsage, watchUsage } from './help.js';
import { commonOptions, usageErrorOf } from './parse.js';
import { UsageError } from './usage-error.js';

/** One operator command's command line: its options (strings and booleans) and its positionals. */
function parse(
  argv: readonly string[],
  usage: string,
  options: Record<string, { type: 'string' | 'boolean' }>,
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  try {
    return parseArgs({ args: [...argv], options: { ...commonOptions, ...options }, strict: true, allowPositionals: true });
  } catch (error) {
    throw usageErrorOf(error, usage);
  }
}

export type Help = { readonly help: true };

/** `inspect <key> [--json]` */
export function parseInspectArgs(argv: readonly string[]): Help | { help: false; url: string | undefined; key: string; json: boolean } {
  const { values, positionals } = parse(argv, inspectUsage, { json: { type: 'boolean' } });
  if (values.help === true) return { help: true };
  const [key, ...extra] = positionals;
  if (key === undefined || key === '') throw new UsageError('missing the key', inspectUsage);
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`, inspectUsage);
  return { help: false, url: values.url as string | undefined, key, json: values.json === true };
}

/** `last-run <job> [--json]` */
export function parseLastRunArgs(argv: readonly string[]): Help | { help: false; url: string | undefined; job: string; json: boolean } {
  const { values, positionals } = parse(argv, lastRunUsage, { json: { type: 'boolean' } });
  if (values.help === true) return { help: true };
  const [job, ...extra] = positionals;
  if (job === undefined || job === '') throw new UsageError('missing the job name', lastRunUsage);
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`, lastRunUsage);
  return { help: false, url: values.url as string | undefined, job, json: values.json === true };
}

/** `list [--prefix p] [--limit n] [--json]` */
export function parseListArgs(
  argv: readonly string[],
): Help | { help: false; url: string | undefined; prefix: string | undefined; limit: number | undefined; json: boolean } {
  const { values, positionals } = parse(argv, listUsage, {
    json: { type: 'boolean' },
    prefix: { type: 'string' },
    limit: { type: 'string' },
  });
  if (values.help === true) return { help: true };
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`, listUsage);
  const limitText = values.limit as string | undefined;
  if (limitText !== undefined && !/^[1-9]\d{0,8}$/.test(limitText))
    throw new UsageError(`--limit must be a positive integer, got "${limitText}"`, listUsage);
  return {
    help: false,
    url: values.url as string | undefined,
    prefix: values.prefix as string | undefined,
    limit: limitText === undefined ? undefined : Number(limitText),
    json: values.json === true,
  };
}

/** `release <key> --force [--json]`: without --force it refuses (a release that is not the holder's breaks exclusion). */
export function parseReleaseArgs(argv: readonly string[]): Help | { help: false; url: string | undefined; key: string; json: boolean } {
  const { values, positionals } = parse(argv, releaseUsage, { force: { type: 'boolean' }, json: { type: 'boolean' } });
  if (values.help === true) return { help: true };
  const [key, ...extra] = positionals;
  if (key === undefined || key === '') throw new UsageError('missing the key', releaseUsage);
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`, releaseUsage);
  if (values.force !== true)
    throw new UsageError(
      'release takes the lock away from whoever holds it, while that holder may still be running: pass --force to confirm',
      releaseUsage,
    );
  return { help: false, url: values.url as string | undefined, key, json: values.json === true };
}

/** `watch <key...> [--interval ms]` */
export function parseWatchArgs(
  argv: readonly string[],
): Help | { help: false; url: string | undefined; keys: readonly string[]; intervalMs: number } {
  const { values, positionals } = parse(argv, watchUsage, { interval: { type: 'string' } });
  if (values.help === true) return { help: true };
  if (positionals.length === 0 || positionals.includes('')) throw new UsageError('missing the keys to watch', watchUsage);
  return {
    help: false,
    url: values.url as string | undefined,
    keys: positionals,
    intervalMs: parseMs('interval', values.interval as string | undefined, defaults.intervalMs, watchUsage),
  };
}
