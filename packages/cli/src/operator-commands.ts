import { exitCodes } from './exit-codes.js';
import { inspectHelp, inspectUsage, listHelp, listUsage, releaseHelp, releaseUsage } from './help.js';
import { inspectionLines } from './inspection-text.js';
import { parseInspectArgs, parseListArgs, parseReleaseArgs } from './operator-args.js';
import { withOperatorClient } from './operator-client.js';
import type { Io, Output } from './output.js';

/** `deadbolt inspect <key>`: who holds the key and for how long. Exit 0 held, 1 free. */
export async function inspectCommand(argv: readonly string[], io: Io, output: Output): Promise<number> {
  const args = parseInspectArgs(argv);
  if (args.help) {
    output.help(inspectHelp);
    return exitCodes.ok;
  }
  return withOperatorClient(args.url, io, output, inspectUsage, async (client) => {
    const seen = await client.inspect(args.key);
    if (args.json) output.data(JSON.stringify(seen));
    else for (const line of inspectionLines(seen)) output.data(line);
    return seen.held ? exitCodes.ok : exitCodes.notHeld;
  });
}

/** `deadbolt list`: the held keys, one inspection each (JSON lines with --json). */
export async function listCommand(argv: readonly string[], io: Io, output: Output): Promise<number> {
  const args = parseListArgs(argv);
  if (args.help) {
    output.help(listHelp);
    return exitCodes.ok;
  }
  return withOperatorClient(args.url, io, output, listUsage, async (client) => {
    const options = {
      ...(args.prefix === undefined ? {} : { prefix: args.prefix }),
      ...(args.limit === undefined ? {} : { limit: args.limit }),
    };
    for await (const seen of client.list(options)) {
      if (args.json) output.data(JSON.stringify(seen));
      else for (const line of inspectionLines(seen)) output.data(line);
    }
    return exitCodes.ok;
  });
}

/** `deadbolt release <key> --force`: takes the key back from every holder. Exit 0 released, 1 nothing was held. */
export async function releaseCommand(argv: readonly string[], io: Io, output: Output): Promise<number> {
  const args = parseReleaseArgs(argv);
  if (args.help) {
    output.help(releaseHelp);
    return exitCodes.ok;
  }
  return withOperatorClient(args.url, io, output, releaseUsage, async (client) => {
    const released = await client.forceRelease(args.key);
    if (args.json) output.data(JSON.stringify({ key: args.key, released }));
    else output.data(released ? `released ${args.key}` : `${args.key} was not held`);
    return released ? exitCodes.ok : exitCodes.notHeld;
  });
}
