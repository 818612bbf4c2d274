import { constants } from 'node:os';

/**
 * deadbolt's own exit codes. They follow sysexits.h where one fits, so scripts and supervisors that
 * already know EX_USAGE or EX_TEMPFAIL (retry later) need nothing new. `run` otherwise exits with
 * its command's code, so these can collide with a command that uses them too: a script that must
 * tell them apart reads deadbolt's stderr, which always says why deadbolt itself gave up.
 */
export const exitCodes = Object.freeze({
  /** Done; for `run`, the command's own code replaces it. */
  ok: 0,
  /** `leader`: the election has no leader right now. */
  noLeader: 1,
  /** `inspect`: the key is free; `release --force`: nothing was held. */
  notHeld: 1,
  /** Bad command line (EX_USAGE): nothing was contacted. */
  usage: 64,
  /** The backend did not answer or refused us (EX_UNAVAILABLE). */
  unavailable: 69,
  /** The lock stayed busy for the whole --wait (EX_TEMPFAIL: try again later). */
  timeout: 75,
  /** The backend's adapter package is not installed, or the server refused the configuration (EX_CONFIG). */
  config: 78,
  /** deadbolt itself failed unexpectedly (EX_SOFTWARE): a bug to report. */
  software: 70,
  /** `run`: the lock was lost while the command ran, and the command was stopped. */
  lost: 79,
  /** `run`: the command could not be executed (as shells do). */
  notExecutable: 126,
  /** `run`: the command was not found (as shells do). */
  notFound: 127,
});

/** 128 + the signal's number: how shells report a command that a signal killed. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}
