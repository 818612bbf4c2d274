import { parseArgs } from 'node:util';
import { parseMs } from './durations.js';
import { defaults, leaderUsage } from './help.js';
import { commonOptions, usageErrorOf } from './parse.js';
import { UsageError } from './usage-error.js';

export interface LeaderArgs {
  readonly help: false;
  readonly url: string | undefined;
  readonly name: string;
  readonly json: boolean;
  readonly watch: boolean;
  readonly intervalMs: number;
}

/** `leader <name> [--watch [--interval ms]] [--json]`. */
export function parseLeaderArgs(argv: readonly string[]): LeaderArgs | { readonly help: true } {
  const { values, positionals } = (() => {
    try {
      return parseArgs({
        args: [...argv],
        options: { ...commonOptions, json: { type: 'boolean' }, watch: { type: 'boolean' }, interval: { type: 'string' } },
        strict: true,
        allowPositionals: true,
      });
    } catch (error) {
      throw usageErrorOf(error, leaderUsage);
    }
  })();
  if (values.help === true) return { help: true };
  const [name, ...extra] = positionals;
  if (name === undefined || name === '') throw new UsageError('missing the election name', leaderUsage);
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`, leaderUsage);
  if (values.interval !== undefined && values.watch !== true) throw new UsageError('--interval only applies with --watch', leaderUsage);
  return {
    help: false,
    url: values.url,
    name,
    json: values.json === true,
    watch: values.watch === true,
    intervalMs: parseMs('interval', values.interval, defaults.intervalMs, leaderUsage),
  };
}
