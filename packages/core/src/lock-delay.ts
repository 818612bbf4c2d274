import type { LockBackend } from './contract/backend.js';
import type { Capabilities } from './contract/capabilities.js';
import type { LockKind } from './contract/requests.js';
import { InvalidArgumentError, UnsupportedOperationError } from './errors.js';
import { refusal } from './refusal.js';
import { maxDurationMs } from './validation.js';

/**
 * Lock-delay (Chubby's, Consul's): after a holder's lease runs out or its session dies without a
 * release, the server keeps the key from every other owner for `lockDelayMs` more, on its own clock,
 * so a holder that was only stalled (a GC pause, a partition) has time to notice its loss before a
 * successor starts. A clean release never delays. Core checks that the backend can enforce it.
 */

/** Refuses, before any I/O, a lock-delay the backend cannot enforce, and any on a read, write or permit hold. */
export function checkLockDelaySupported(lockDelayMs: number, backend: LockBackend, key: string, kind: LockKind | undefined): void {
  if (lockDelayMs === 0) return;
  if (kind !== undefined) {
    throw new UnsupportedOperationError(
      'lockDelayMs',
      `lock-delay applies to the exclusive lock only, not to ${kind.type} holds; acquire with lockDelayMs: 0`,
      { key, backend: backend.name },
    );
  }
  if (backend.capabilities.lockDelay === true) return;
  throw refusal(
    'lockDelayMs',
    `this backend cannot enforce it (capabilities.lockDelay is not true: ${lackOf(backend.capabilities)})`,
    backend,
    key,
    'lockDelay',
  );
}

/** What the backend lacks, in its own terms: the message should say why, not only that. */
function lackOf(capabilities: Capabilities): string {
  if (capabilities.lease === 'session') return 'its locks live and die with a session, which leaves nothing behind to delay';
  if (capabilities.clock === 'client') return 'its expiry is judged on client clocks, not the server';
  return 'it keeps no expired key past its lease';
}

/**
 * The `lockDelayMs` URL parameter is core's, as `prefix` is: read here and taken out of the URL
 * before the backend sees it (adapters refuse parameters they do not know).
 */
export function takeLockDelayParameter(url: URL | undefined, urlText: string | undefined): { lockDelayMs?: number; urlText?: string } {
  if (url === undefined || !url.searchParams.has('lockDelayMs')) return urlText === undefined ? {} : { urlText };
  const values = url.searchParams.getAll('lockDelayMs');
  if (values.length > 1) throw new InvalidArgumentError('URL parameter "lockDelayMs"', 'given twice');
  const text = values[0]!;
  const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(value) || value > maxDurationMs) {
    throw new InvalidArgumentError(
      'lockDelayMs',
      `expected a non-negative integer of milliseconds up to ${maxDurationMs}, got ${JSON.stringify(text)}`,
    );
  }
  url.searchParams.delete('lockDelayMs');
  const stripped = urlText?.replace(/([?&])lockDelayMs=[^&#]*(&|(?=#)|$)/, (_match, lead: string, tail: string) =>
    tail === '&' ? lead : '',
  );
  return { lockDelayMs: value, ...(stripped === undefined ? {} : { urlText: stripped }) };
}
