import { createRequire } from 'node:module';
import { exitCodes } from './exit-codes.js';
import { mainHelp, mainUsage } from './help.js';
import { lastRunCommand } from './last-run.js';
import { leaderCommand } from './leader.js';
import { inspectCommand, listCommand, releaseCommand } from './operator-commands.js';
import { watchCommand } from './watch.js';
import { type Io, Output } from './output.js';
import { runCommand } from './run.js';
import { UsageError } from './usage-error.js';

/** This package's version, from its package.json (one level above both src/ and dist/). */
export const version: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

/**
 * The whole CLI: parses `argv` (without node and the script), runs the command and resolves with
 * the exit code. Never exits the process itself, so it can run under test or inside another tool.
 */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  const output = new Output(io);
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'run':
        return await runCommand(rest, io, output);
      case 'leader':
        return await leaderCommand(rest, io, output);
      case 'inspect':
        return await inspectCommand(rest, io, output);
      case 'list':
        return await listCommand(rest, io, output);
      case 'release':
        return await releaseCommand(rest, io, output);
      case 'watch':
        return await watchCommand(rest, io, output);
      case 'last-run':
        return await lastRunCommand(rest, io, output);
      case '--version':
      case '-V':
        output.help(version);
        return exitCodes.ok;
      case '--help':
      case '-h':
      case 'help':
        output.help(mainHelp);
        return exitCodes.ok;
      case undefined:
        throw new UsageError('missing the command', mainUsage);
      default:
        throw new UsageError(`unknown command "${command}"`, mainUsage);
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    output.error(error.message);
    output.note(error.usage);
    output.note('Try deadbolt <command> --help.');
    return exitCodes.usage;
  }
}
