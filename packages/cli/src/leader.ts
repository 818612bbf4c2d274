import { createLockClient, type Election, type LockClient } from '@deadbolt/core';
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
  const print = (leader: string | null): void => {
    if (args.json) output.data(JSON.stringify({ leader, at: new Date().toISOString() }));
    else if (leader !== null || args.watch) output.data(leader ?? '');
  };
  try {
    const election = client.elect(args.name, { id: observerId });
    if (!args.watch) {
      const leader = await election.leader();
      print(leader);
      return leader === null ? exitCodes.noLeader : exitCodes.ok;
    }
    await watch(election, args.intervalMs, signals.signal, print);
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

/**
 * Polls `election.leader()` every `intervalMs` and reports each change (the first answer too)
 * until `stop` aborts. Polling, because the API has no way to observe an election yet: a change
 * and its undoing within one interval go unseen.
 */
async function watch(election: Election, intervalMs: number, stop: AbortSignal, report: (leader: string | null) => void): Promise<void> {
  let last: string | null | undefined;
  while (!stop.aborted) {
    const leader = await election.leader();
    if (stop.aborted) return;
    if (leader !== last) report(leader);
    last = leader;
    await pause(intervalMs, stop);
  }
}

function pause(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      stop.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop.addEventListener('abort', done, { once: true });
  });
}
