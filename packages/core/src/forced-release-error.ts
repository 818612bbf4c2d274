import { DeadboltError, type ErrorContext } from './errors.js';

/**
 * The cause of a LockLostError when an operator took the lock back (`client.forceRelease`): the
 * holder is still running, but the lock is no longer its own. `by` is the forcing client's id.
 */
export class ForcedReleaseError extends DeadboltError {
  override readonly code = 'FORCED_RELEASE';
  readonly by: string;

  constructor(by: string, context: ErrorContext = {}) {
    super(`forced release by ${by}: an operator took the lock back`, context);
    this.by = by;
  }
}
