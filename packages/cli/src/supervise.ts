import { spawn } from 'node:child_process';
import type { Lock } from '@deadbolt/core';
import { exitCodes, signalExitCode } from './exit-codes.js';
import type { Output } from './output.js';
import type { SignalRelay } from './signal-relay.js';

export interface SuperviseOptions {
  readonly lock: Lock;
  readonly command: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly graceMs: number;
  readonly signals: SignalRelay;
  readonly output: Output;
}

/**
 * Runs the command while the lock is held and resolves with the code deadbolt should exit with:
 * the command's (128 + signal number when a signal killed it), or `lost` when the lock was lost
 * and the command had to be stopped: SIGTERM at once, SIGKILL after the grace period.
 */
export function superviseCommand({ lock, command, env, graceMs, signals, output }: SuperviseOptions): Promise<number> {
  const [file, ...args] = command as [string, ...string[]];
  const childEnv: NodeJS.ProcessEnv = { ...env, DEADBOLT_KEY: lock.key };
  // A nested deadbolt must not pass its own holder's fence on as ours.
  delete childEnv.DEADBOLT_FENCE;
  if (lock.fence !== undefined) childEnv.DEADBOLT_FENCE = String(lock.fence);

  return new Promise((resolve) => {
    let lost = false;
    let killTimer: NodeJS.Timeout | undefined;
    let settled = false;
    const settle = (code: number): void => {
      if (settled) return;
      settled = true;
      clearTimeout(killTimer);
      lock.signal.removeEventListener('abort', onLost);
      resolve(code);
    };

    const child = spawn(file, args, { stdio: 'inherit', env: childEnv });
    signals.forwardTo((signal) => child.kill(signal));

    const onLost = (): void => {
      lost = true;
      const reason = lock.signal.reason as { reason?: string; message?: string } | undefined;
      output.error(
        `lost the lock "${lock.key}" (${reason?.reason ?? reason?.message ?? 'no reason given'}); ` +
          `stopping the command: SIGTERM now, SIGKILL in ${graceMs} ms if it is still running`,
      );
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    };
    if (lock.signal.aborted) onLost();
    else lock.signal.addEventListener('abort', onLost, { once: true });

    child.on('error', (error: NodeJS.ErrnoException) => {
      // After a start, only a failed kill() lands here; the 'exit' event still decides the code.
      if (child.pid !== undefined) return output.error(`cannot signal the command: ${error.message}`);
      // The command never started: report it as a shell would.
      output.error(`cannot run ${file}: ${error.message}`);
      settle(error.code === 'ENOENT' ? exitCodes.notFound : exitCodes.notExecutable);
    });
    child.once('exit', (code, signal) => {
      if (lost) {
        output.error(`the command was stopped because the lock was lost; exiting ${exitCodes.lost}`);
        settle(exitCodes.lost);
      } else settle(signal !== null ? signalExitCode(signal) : (code ?? exitCodes.software));
    });
  });
}
