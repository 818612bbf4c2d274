import type { Capabilities } from './contract/capabilities.js';
import { InvalidArgumentError } from './errors.js';
import type { AcquireOptions } from './api/lock.js';

/** setTimeout's ceiling: a longer ttl or wait would silently fire at once. */
export const maxDurationMs = 2 ** 31 - 1;

/** An explicit owner id's limit: it is stored beside every lock (a ZooKeeper node's data, a hash field). */
export const maxOwnerBytes = 1_024;

/** A lone surrogate: UTF-8 encoders turn each into U+FFFD, so '\ud800' and '\udbff' would be one lock. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why `text` cannot name a lock or an owner on every backend, or undefined: NUL (PostgreSQL text
 * and C-string APIs stop or fail there) and ill-formed UTF-16 (lone surrogates).
 */
export function unsafeText(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character (\\u0000), which not every backend can store';
  if (loneSurrogate.test(text)) return 'is not well-formed UTF-16 (a lone surrogate): it would encode to the same bytes as U+FFFD';
  return undefined;
}

const acquireOptionNames: ReadonlySet<string> = new Set([
  'ttlMs',
  'waitMs',
  'autoRenew',
  'signal',
  'owner',
  'lockDelayMs',
  'expiringThresholdMs',
]);

/** Checks what can be checked without the backend: types, ranges, unknown names. No I/O. */
export function validateAcquireOptions(
  key: unknown,
  options: unknown,
  backend: string,
  allowWait = true,
): asserts options is AcquireOptions | undefined {
  validateKey(key, backend);
  if (options === undefined) return;
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError('options', `expected an object, got ${describeValue(options)}`, { key, backend });
  }
  const record = options as Record<string, unknown>;
  for (const name in record) {
    if (!Object.hasOwn(record, name)) continue;
    if (!acquireOptionNames.has(name) || (name === 'waitMs' && !allowWait)) {
      const allowed = [...acquireOptionNames].filter((n) => allowWait || n !== 'waitMs').join(', ');
      throw new InvalidArgumentError(`option "${name}"`, `unknown option; the options are ${allowed}`, { key, backend });
    }
  }
  checkDuration('ttlMs', record.ttlMs, 1, key, backend);
  checkDuration('waitMs', record.waitMs, 0, key, backend);
  checkDuration('lockDelayMs', record.lockDelayMs, 0, key, backend);
  checkDuration('expiringThresholdMs', record.expiringThresholdMs, 0, key, backend);
  if (record.autoRenew !== undefined && typeof record.autoRenew !== 'boolean') {
    throw new InvalidArgumentError('autoRenew', `expected true or false, got ${describeValue(record.autoRenew)}`, { key, backend });
  }
  if (record.signal !== undefined && !(record.signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('signal', `expected an AbortSignal, got ${describeValue(record.signal)}`, { key, backend });
  }
  if (record.owner !== undefined) {
    if (typeof record.owner !== 'string' || record.owner.length === 0) {
      throw new InvalidArgumentError('owner', `expected a non-empty string, got ${describeValue(record.owner)}`, { key, backend });
    }
    const badOwner = unsafeText(record.owner);
    if (badOwner !== undefined) throw new InvalidArgumentError('owner', `the owner ${badOwner}`, { key, backend });
    const bytes = Buffer.byteLength(record.owner, 'utf8');
    if (bytes > maxOwnerBytes)
      throw new InvalidArgumentError('owner', `${bytes} bytes, over the limit of ${maxOwnerBytes}; use a shorter id`, { key, backend });
  }
}

/** A key is a non-empty string of safe text. */
export function validateKey(key: unknown, backend: string): asserts key is string {
  if (typeof key !== 'string') {
    throw new InvalidArgumentError('key', `expected a string, got ${describeValue(key)}`, { key: undefined, backend });
  }
  if (key.length === 0) {
    throw new InvalidArgumentError('key', 'the key is empty; name the resource the lock protects, e.g. "order:42"', { key, backend });
  }
  const badKey = unsafeText(key);
  if (badKey !== undefined) throw new InvalidArgumentError('key', `the key ${badKey}`, { key, backend });
}

/** The checks that need the backend's capabilities: key length in bytes, minimum ttl. Still no I/O. */
export function validateAgainstCapabilities(
  fullKey: string,
  userKey: string,
  ttlMs: number,
  capabilities: Capabilities,
  backend: string,
): void {
  // A UTF-8 string is at most 3 bytes per UTF-16 unit: a short key needs no byte count.
  const bytes = fullKey.length * 3 <= capabilities.maxKeyBytes ? 0 : Buffer.byteLength(fullKey, 'utf8');
  if (bytes > capabilities.maxKeyBytes) {
    throw new InvalidArgumentError(
      'key',
      `${bytes} bytes with the prefix, over this backend's limit of ${capabilities.maxKeyBytes}; shorten it or hash it`,
      { key: userKey, backend },
    );
  }
  if (ttlMs < capabilities.minTtlMs) {
    throw new InvalidArgumentError(
      'ttlMs',
      `${ttlMs} ms is below this backend's shortest lease of ${capabilities.minTtlMs} ms; use ttlMs >= ${capabilities.minTtlMs}`,
      { key: userKey, backend },
    );
  }
}

function checkDuration(name: string, value: unknown, minimum: number, key: string, backend: string): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maxDurationMs) {
    const range = minimum === 0 ? 'a non-negative integer' : 'a positive integer';
    throw new InvalidArgumentError(name, `expected ${range} of milliseconds up to ${maxDurationMs}, got ${describeValue(value)}`, {
      key,
      backend,
    });
  }
}

export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  return typeof value;
}
