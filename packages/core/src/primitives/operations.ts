import type { LockBackend } from '../contract/backend.js';
import { InvalidArgumentError } from '../errors.js';
import { refusal } from '../refusal.js';
import type { OperationsDriver } from '../contract/drivers.js';
import { driversOf } from '../contract/drivers-of.js';
import type { ListOptions, LockInspection } from '../api/operations.js';
import type { Engine } from '../engine/engine.js';
import { describeValue, validateKey } from '../validation.js';

type Operation = 'inspect' | 'forceRelease' | 'list';

/** What each operation does, for its refusal. */
const whatItDoes: Readonly<Record<Operation, string>> = {
  inspect: 'read holds',
  forceRelease: 'take back holds',
  list: 'enumerate held keys',
};

/** The driver's method for `operation`, if it offers it. */
function offers(operations: OperationsDriver, operation: Operation): boolean {
  if (operation === 'forceRelease') return operations.forceRelease !== undefined;
  if (operation === 'list') return operations.listKeys !== undefined;
  return true;
}

/** The backend's operator methods, or UnsupportedOperationError naming the operation before any I/O. */
function operationsOf(backend: LockBackend, operation: Operation, key: string | undefined): OperationsDriver {
  const operations = driversOf(backend).operations;
  if (operations !== undefined && offers(operations, operation)) return operations;
  const why =
    operations === undefined
      ? 'capabilities.operations is not declared: it offers no operations driver'
      : `capabilities.operations does not include '${operation}'`;
  throw refusal(operation, `this backend cannot ${whatItDoes[operation]} (${why})`, backend, key, 'operations');
}

export async function inspectKey(engine: Engine, key: string): Promise<LockInspection> {
  validateKey(key, engine.backend);
  engine.assertOpen(key);
  const backend = await engine.backendLoading;
  const ops = operationsOf(backend, 'inspect', key);
  const fullKey = engine.prefixOf(backend) + key;
  const seen = await engine.call(backend, 'inspect', key, () => ops.inspect(fullKey));
  return {
    key,
    held: seen.holders.length > 0,
    holders: seen.holders,
    ...(seen.waiters === undefined ? {} : { waiters: seen.waiters }),
  };
}

export async function forceReleaseKey(engine: Engine, key: string): Promise<boolean> {
  validateKey(key, engine.backend);
  engine.assertOpen(key);
  const backend = await engine.backendLoading;
  const ops = operationsOf(backend, 'forceRelease', key);
  const fullKey = engine.prefixOf(backend) + key;
  const released = await engine.call(backend, 'forceRelease', key, () => ops.forceRelease!(fullKey, engine.id));
  engine.emit('forced', { key, released });
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
export async function* listInspections(engine: Engine, options?: ListOptions): AsyncGenerator<LockInspection> {
  validateListOptions(options, engine.backend);
  engine.assertOpen(options?.prefix ?? '');
  const backend = await engine.backendLoading;
  const ops = operationsOf(backend, 'list', undefined);
  const clientPrefix = engine.prefixOf(backend);
  const limit = options?.limit ?? Number.POSITIVE_INFINITY;
  let yielded = 0;
  for await (const fullKey of ops.listKeys!(clientPrefix + (options?.prefix ?? ''))) {
    const inspection = await inspectKey(engine, fullKey.slice(clientPrefix.length));
    if (!inspection.held) continue;
    yield inspection;
    yielded += 1;
    if (yielded >= limit) return;
  }
}
