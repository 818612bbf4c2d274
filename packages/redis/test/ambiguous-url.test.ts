import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import { resolveRedisOptions } from '../src/index.js';

// Issue 14 item 4: a password holding an unencoded '/', '?', '#' or '@' must not be read as a host
// (sent to DNS, printed in errors). Refused before any I/O, and no piece of it is echoed.
const urls = [
  'redis://u:S3cr3t-p@ss/w:rd#x@127.0.0.1/db',
  'redis://u:S3cr3t/Zq7@127.0.0.1:1',
  'redis://u:S3cr3t?Zq7@127.0.0.1:1',
  'redis://u:S3cr3t#Zq7@127.0.0.1:1',
  'redis://u:S3cr3t@Zq7@127.0.0.1:1',
];

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

describe('redis: ambiguous URLs', () => {
  it.each(urls)('%s is an InvalidArgumentError naming the backend, through the adapter and through createLockClient', (url) => {
    for (const error of [thrown(() => resolveRedisOptions(url)), thrown(() => createLockClient(url))]) {
      expect(error).toBeInstanceOf(InvalidArgumentError);
      for (const piece of ['S3cr3t', 'Zq7', 'ss/w', 'rd#x']) expect(error.message).not.toContain(piece);
    }
    expect((thrown(() => resolveRedisOptions(url)) as InvalidArgumentError).backend).toBe('redis');
  });
});
