import { InvalidArgumentError } from '../errors.js';
import type { Engine } from '../engine/engine.js';
import type { Semaphore, SemaphoreOptions } from '../api/primitives.js';
import { KindSide } from './read-write.js';
import { describeValue, maxDurationMs, validateKey } from '../validation.js';

/** The largest semaphore: far beyond any real quota, small enough for every backend's counters. */
export const maxPermits = maxDurationMs;

class SemaphoreSide extends KindSide implements Semaphore {
  constructor(
    engine: Engine,
    key: string,
    readonly permits: number,
  ) {
    super(engine, key, { type: 'permit', permits });
  }
}

/** `engine.semaphore(key, { permits })`: validated here, before any I/O; capability checked at the first acquire. */
export function createSemaphore(engine: Engine, key: string, options: SemaphoreOptions, backend: string): Semaphore {
  validateKey(key, backend);
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('options', `expected { permits: number }, got ${describeValue(options)}`, { key, backend });
  for (const name in options) {
    if (Object.hasOwn(options, name) && name !== 'permits')
      throw new InvalidArgumentError(`option "${name}"`, 'unknown option; a semaphore takes { permits }', { key, backend });
  }
  const { permits } = options;
  if (typeof permits !== 'number' || !Number.isInteger(permits) || permits < 1 || permits > maxPermits) {
    throw new InvalidArgumentError('permits', `expected a positive integer up to ${maxPermits}, got ${describeValue(permits)}`, {
      key,
      backend,
    });
  }
  return new SemaphoreSide(engine, key, permits);
}
