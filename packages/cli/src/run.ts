import { createLockClient, type Lock, type LockClient } from '@deadbolt/core';
import { resolveBackendUrl } from './backend-url.js';
import { exitCodes, signalExitCode } from './exit-codes.js';
import { describeFailure } from './failures.js';
import { runHelp, runUsage } from './help.js';
import type { Io, Output } from './output.js';
import { parseRunArgs } from './run-args.js';
import { SignalRelay } from './signal-relay.js';
import { superviseCommand } from './supervise.js';
import { UsageError } from './usage-error.js';

/** `deadbolt run`: acquire, run the command while holding the lock, release. Resolves with the exit code. */
export async function runCommand(argv: readonly string[], io: Io, output: Output): Promise<number> {
  const args = parseRunArgs(argv);
  if (args.help) {
    output.help(runHelp);
    return exitCodes.ok;
  }
  const backend = resolveBackendUrl(args.url, io.env, runUsage);
  output.hide(backend.secrets);
  const client = createClient(backend.text);

  const signals = new SignalRelay();
  let lock: Lock | undefined;
  try {
    lock = await client.acquire(args.key, { ttlMs: args.ttlMs, waitMs: args.waitMs, autoRenew: true, signal: signals.signal });
    if (signals.received !== undefined) return signalExitCode(signals.received);
    return await superviseCommand({ lock, command: args.command, env: io.env, graceMs: args.graceMs, signals, output });
  } catch (error) {
    if (signals.received !== undefined && lock === undefined) {
      output.error(`interrupted by ${signals.received} while waiting for the lock "${args.key}"`);
      return signalExitCode(signals.received);
    }
    const failure = describeFailure(error);
    output.error(failure.message);
    return failure.exitCode;
  } finally {
    signals[Symbol.dispose]();
    await releaseAndClose(client, lock, output);
  }
}

/** createLockClient checks the URL before any I/O: a URL it refuses is a usage error. */
function createClient(url: string): LockClient {
  try {
    return createLockClient(url);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), runUsage);
  }
}

/** Gives the lock back (a lost lock has nothing to give back) and closes the connection; a failure is only reported. */
async function releaseAndClose(client: LockClient, lock: Lock | undefined, output: Output): Promise<void> {
  if (lock !== undefined && !lock.signal.aborted) {
    await lock.release().catch((error: unknown) => {
      output.error(`could not release the lock "${lock.key}"; it frees itself when its lease runs out: ${describeFailure(error).message}`);
    });
  }
  await client.close().catch(() => undefined);
}
