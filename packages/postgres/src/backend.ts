import type { LockBackend } from '@deadbolt/core/adapter';
import { AdvisoryBackend } from './modes/advisory.js';
import { LeaseBackend } from './modes/lease.js';
import type { ResolvedPostgresOptions } from './options.js';

/** Picks the mode's backend. No I/O: both connect lazily on first use. */
export function createPostgresBackendFromOptions(options: ResolvedPostgresOptions): LockBackend {
  return options.mode === 'lease' ? new LeaseBackend(options) : new AdvisoryBackend(options);
}
