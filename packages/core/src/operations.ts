import type { LockBackend } from './backend.js';
import { InvalidArgumentError, UnsupportedOperationError } from './errors.js';
import type { OperationsDriver } from './contract/drivers.js';
import { driversOf } from './contract/legacy.js';
import type { ForcedEvent, ListOptions, LockInspection } from './operations-types.js';
import { describeValue, validateKey } from './validation.js';

/** What the operator API needs of its client: the backend, the prefix, guarded calls, the 'forced' event. */
export interface OperationsSite {
  readonly clientId: string;
  label(): string;
  backend(): Promise<LockBackend>;
  prefixOf(backend: LockBackend): string;
  assertOpen(key: string): void;
  call<T>(backend: LockBackend, action: string, key: string, fn: () => Promise<T>): Promise<T>;
  forced(event: ForcedEvent): void;
}

/** The backend's operator methods, or UnsupportedOperationError before any I/O. */
function operationsOf(backend: LockBackend, operation: string, key: string | undefined): OperationsDriver {
  const operations = driversOf(backend).operations;
  if (operations !== undefined) return operations;
  throw new UnsupportedOperationError(
    operation,
    `the ${backend.name} backend cannot read or take back holds (it implements no operator methods); the README's "Operating Deadbolt" section lists the backends that can`,
    {
      key,
      backend: backend.name,
    },
  );
}

export async function inspectKey(site: OperationsSite, key: string): Promise<LockInspection> {
  validateKey(key, site.label());
  site.assertOpen(key);
  const backend = await site.backend();
  const ops = operationsOf(backend, 'inspect', key);
  const fullKey = site.prefixOf(backend) + key;
  const seen = await site.call(backend, 'inspect', key, () => ops.inspect(fullKey));
  return {
    key,
    held: seen.holders.length > 0,
    holders: seen.holders,
    ...(seen.waiters === undefined ? {} : { waiters: seen.waiters }),
  };
}

export async function forceReleaseKey(site: OperationsSite, key: string): Promise<boolean> {
  validateKey(key, site.label());
  site.assertOpen(key);
  const backend = await site.backend();
  const ops = operationsOf(backend, 'forceRelease', key);
  const fullKey = site.prefixOf(backend) + key;
  const released = await site.call(backend, 'forceRelease', key, () => ops.forceRelease(fullKey, site.clientId));
  site.forced({ key, released });
  return released;
}

/** Checks list()'s options (no I/O). */
function validateListOptions(options: ListOptions | undefined, backend: string): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('options', `expected an object, got ${describeValue(options)}`, { backend });
  for (const name of Object.keys(options))
    if (name !== 'prefix' && name !== 'limit')
      throw new InvalidArgumentError(`option "${name}"`, 'unknown option; the options are prefix, limit', { backend });
  if (options.prefix !== undefined && typeof options.prefix !== 'string')
    throw new InvalidArgumentError('prefix', `expected a string, got ${describeValue(options.prefix)}`, { backend });
  const { limit } = options;
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1))
    throw new InvalidArgumentError('limit', `expected a positive integer, got ${describeValue(limit)}`, { backend });
}

/**
 * The keys under the client's prefix + `options.prefix`, each inspected; keys freed between the
 * listing and the inspection are left out. Options are checked and support is decided on the
 * first `next()`, before any I/O.
 */
export async function* listInspections(site: OperationsSite, options?: ListOptions): AsyncGenerator<LockInspection> {
  validateListOptions(options, site.label());
  site.assertOpen(options?.prefix ?? '');
  const backend = await site.backend();
  const ops = operationsOf(backend, 'list', undefined);
  const clientPrefix = site.prefixOf(backend);
  const limit = options?.limit ?? Number.POSITIVE_INFINITY;
  let yielded = 0;
  for await (const fullKey of ops.listKeys(clientPrefix + (options?.prefix ?? ''))) {
    const inspection = await inspectKey(site, fullKey.slice(clientPrefix.length));
    if (!inspection.held) continue;
    yield inspection;
    yielded += 1;
    if (yielded >= limit) return;
  }
}
