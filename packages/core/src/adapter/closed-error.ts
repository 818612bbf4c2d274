import { BackendUnavailableError } from '../errors.js';

/**
 * The error of a call made to a backend after its close() began: BackendUnavailableError naming
 * the action, key and backend, caused by "the backend is closed". Every adapter throws this one,
 * so a caller tells a closed backend from an outage by the same words everywhere.
 */
export function closedError(action: string, key: string | undefined, backend: string): BackendUnavailableError {
  return new BackendUnavailableError(action, { key, backend, cause: new Error('the backend is closed') });
}
