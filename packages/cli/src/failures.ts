import { exitCodes } from './exit-codes.js';

/** What deadbolt says and exits with when the library gave up. */
export interface Failure {
  readonly exitCode: number;
  readonly message: string;
}

/**
 * Maps a library error to an exit code by its stable `code` field (not instanceof: the adapter and
 * the CLI may load two copies of core). Anything else is a bug, reported as EX_SOFTWARE (70).
 */
export function describeFailure(error: unknown): Failure {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  switch (code) {
    case 'LOCK_TIMEOUT':
      return { exitCode: exitCodes.timeout, message };
    case 'BACKEND_UNAVAILABLE':
      return { exitCode: exitCodes.unavailable, message };
    case 'BACKEND_CONFIGURATION':
      return { exitCode: exitCodes.config, message };
    case 'LOCK_LOST':
      return { exitCode: exitCodes.lost, message };
    case 'UNSUPPORTED':
      return { exitCode: exitCodes.config, message };
    case 'INVALID_ARGUMENT':
      // The adapter package is missing (or did not register): a matter of installation, not of the command line.
      return { exitCode: (error as { argument?: unknown }).argument === 'backend' ? exitCodes.config : exitCodes.usage, message };
    default:
      return { exitCode: exitCodes.software, message: `unexpected error: ${message}` };
  }
}
