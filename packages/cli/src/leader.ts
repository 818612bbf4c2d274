import { createLockClient, type LockClient } from '@deadbolt/core';
import { resolveBackendUrl } from './backend-url.js';
import { exitCodes } from './exit-codes.js';
import { describeFailure } from './failures.js';
import { leaderHelp, leaderUsage } from './help.js';
import { parseLeaderArgs } from './leader-args.js';
import type { Io, Output } from './output.js';
import { SignalRelay } from './signal-relay.js';
import { UsageError } from './usage-error.js';

/**
 * The id an observer joins the election under. `leader()` only reads: the observer never
 * campaigns, so it never becomes the leader it reports.
 */
const observerId = 'deadbolt-cli-observer';

/** `deadbolt leader`: prints the current leader, or every change of leader with --watch. */
export async function leaderCommand(argv: readonly string[], io: Io, output: Output): Promise<number> {
  const args = parseLeaderArgs(argv);
  if (args.help) {
    output.help(leaderHelp);
    return exitCodes.ok;
  }
  const backend = resolveBackendUrl(args.url, io.env, leaderUsage);
  output.hide(backend.secrets);
  let client: LockClient;
  try {
    client = createLockClient(backend.text);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), leaderUsage);
  }
  const signals = new SignalRelay();
  const print = (leader: string | null, term?: number | null): void => {
    const at = new Date().toISOString();
    if (args.json) output.data(JSON.stringify(term === undefined ? { leader, at } : { leader, term, at }));
    else if (leader !== null || args.watch) output.data(leader ?? '');
  };
  try {
    const election = client.elect(args.name, { id: observerId });
    if (!args.watch) {
      const leader = await election.leader();
      print(leader);
      return leader === null ? exitCodes.noLeader : exitCodes.ok;
    }
    for await (const change of election.observe({ signal: signals.signal, intervalMs: args.intervalMs })) print(change.leader, change.term);
    return exitCodes.ok;
  } catch (error) {
    const failure = describeFailure(error);
    output.error(failure.message);
    return failure.exitCode;
  } finally {
    signals[Symbol.dispose]();
    await client.close().catch(() => undefined);
  }
}
