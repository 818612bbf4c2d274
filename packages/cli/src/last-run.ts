import type { LastRun } from '@deadbolt/core';
import { exitCodes } from './exit-codes.js';
import { lastRunHelp, lastRunUsage } from './help.js';
import { parseLastRunArgs } from './operator-args.js';
import { withOperatorClient } from './operator-client.js';
import type { Io, Output } from './output.js';

/** `deadbolt last-run <job>`: did the job run, where, and how did it end? Exit 0 a record, 1 never ran. */
export async function lastRunCommand(argv: readonly string[], io: Io, output: Output): Promise<number> {
  const args = parseLastRunArgs(argv);
  if (args.help) {
    output.help(lastRunHelp);
    return exitCodes.ok;
  }
  return withOperatorClient(args.url, io, output, lastRunUsage, async (client) => {
    const run = await client.lastRun(args.job);
    if (args.json) output.data(JSON.stringify(run === null ? { job: args.job } : { job: args.job, ...recordOf(run) }));
    else output.data(run === null ? `${args.job} never ran` : lineOf(args.job, run));
    return run === null ? exitCodes.notHeld : exitCodes.ok;
  });
}

function recordOf(run: LastRun): Record<string, unknown> {
  return {
    runner: run.runner,
    startedAt: run.startedAt.toISOString(),
    ...(run.finishedAt === undefined ? {} : { finishedAt: run.finishedAt.toISOString() }),
    ...(run.fence === undefined ? {} : { fence: run.fence }),
    outcome: run.outcome,
    ...(run.error === undefined ? {} : { error: run.error }),
  };
}

function lineOf(job: string, run: LastRun): string {
  const ended = run.finishedAt === undefined ? 'not finished' : `finished ${run.finishedAt.toISOString()}`;
  const fence = run.fence === undefined ? '' : ` fence ${run.fence}`;
  const error = run.error === undefined ? '' : `: ${run.error}`;
  return `${job} ${run.outcome}${error} (runner ${run.runner}, started ${run.startedAt.toISOString()}, ${ended}${fence})`;
}
