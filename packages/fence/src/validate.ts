import { InvalidArgumentError } from '@deadbolt/core';

/** A lone surrogate: UTF-8 encoders turn each into U+FFFD, so '\ud800' and '\udbff' would share one record. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null) return 'null';
  return typeof value;
}

/**
 * A fence is what `lock.fence` holds: a non-negative safe integer. Undefined means the lock came
 * from a backend that does not fence (memcached, redlock), which cannot protect a store.
 */
export function checkFence(fence: unknown, resource?: string): asserts fence is number {
  if (fence === undefined || fence === null) {
    throw new InvalidArgumentError(
      'fence',
      `no fence (${describeValue(fence)}); pass lock.fence from a backend that fences (its capabilities say fencing: true)`,
      { key: resource },
    );
  }
  if (typeof fence !== 'number' || !Number.isSafeInteger(fence) || fence < 0) {
    throw new InvalidArgumentError('fence', `expected a non-negative safe integer (lock.fence), got ${describeValue(fence)}`, {
      key: resource,
    });
  }
}

/**
 * A resource is any non-empty string stored exactly as given. Refused: NUL (PostgreSQL text cannot
 * hold it) and lone surrogates (two different names would encode to the same bytes and share a
 * fence record), the same rule as lock keys.
 */
export function checkResource(resource: unknown, argument = 'resource'): asserts resource is string {
  if (typeof resource !== 'string') {
    throw new InvalidArgumentError(argument, `expected a non-empty string, got ${describeValue(resource)}`);
  }
  if (resource.length === 0) throw new InvalidArgumentError(argument, 'the name is empty; name what the write changes, e.g. "order:42"');
  if (resource.includes('\u0000')) {
    throw new InvalidArgumentError(argument, 'contains a NUL character (\\u0000), which PostgreSQL text cannot store', { key: resource });
  }
  if (loneSurrogate.test(resource)) {
    throw new InvalidArgumentError(argument, 'is not well-formed UTF-16 (a lone surrogate): it would encode to the same bytes as U+FFFD', {
      key: resource,
    });
  }
}
