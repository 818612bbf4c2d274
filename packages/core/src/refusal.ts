import type { Capabilities } from './contract/capabilities.js';
import type { LockBackend } from './contract/backend.js';
import { UnsupportedOperationError } from './errors.js';

/** Where a refused primitive sends the user: the page that says which backend offers what. */
export const choosingABackend = "see 'Choosing a backend' in the Deadbolt docs";

/**
 * The error for a primitive the backend does not offer, thrown before any I/O. It says what is
 * missing in the backend's own terms (`capability`: the capability it lacks), adds the adapter's
 * hint where it has one (LockBackend.capabilityHint: "use ?mode=fair"), and points to the docs.
 * Core names no backend here but the one in use: which backends offer what is the docs' to say.
 */
export function refusal(
  operation: string,
  missing: string,
  backend: LockBackend,
  key: string | undefined,
  capability?: keyof Capabilities,
): UnsupportedOperationError {
  const hint = capability === undefined ? undefined : backend.capabilityHint?.(capability);
  const reason = hint === undefined || hint === '' ? `${missing}; ${choosingABackend}` : `${missing}; ${hint}; ${choosingABackend}`;
  return new UnsupportedOperationError(operation, reason, { key, backend: backend.name });
}
