import { BackendUnavailableError } from '@deadbolt/core/adapter';

/** Why work is refused once close() began (the cause every "closed" refusal carries). */
export function closedCause(): Error {
  return new Error('the backend is closed');
}

/** The typed refusal of new work after close(): names the action, the key and the backend. */
export function closedError(action: string, key: string | undefined, backend: string): BackendUnavailableError {
  return new BackendUnavailableError(action, { key, backend, cause: closedCause() });
}
