import { describe, expect, it } from 'vitest';
import {
  booleanOption,
  choiceOption,
  durationOption,
  hostListOption,
  integerOption,
  parseHostList,
  rejectUnknownNames,
  splitBackendUrl,
  stringOption,
  urlParameters,
} from '../src/adapter/index.js';
import { createLockClient, InvalidArgumentError } from '../src/index.js';

const password = 'S3cr3t-p@ss/w:rd#x';

function thrown(fn: () => unknown): InvalidArgumentError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return error as InvalidArgumentError;
  }
  throw new Error('expected a throw');
}

/** URLs whose password holds an unencoded '/', '?', '#' or '@': WHATWG would read part of it as the host. */
const ambiguousUrls = (scheme: string): string[] => [
  `${scheme}://u:S3cr3t-p@ss/w:rd#x@127.0.0.1/db`,
  `${scheme}://u:S3cr3t/Zq7@127.0.0.1:1`,
  `${scheme}://u:S3cr3t?Zq7@127.0.0.1:1`,
  `${scheme}://u:S3cr3t#Zq7@127.0.0.1:1`,
  `${scheme}://u:S3cr3t@Zq7@127.0.0.1:1`,
];

describe('adapter kit: URLs', () => {
  it('splits scheme, decoded credentials, host list, path and parameters', () => {
    const parts = splitBackendUrl('Redis://us%40er:p%2Fw%23@a:1,[::1]:2/3?mode=x&prefix=p', 'redis', ['redis']);
    expect(parts).toMatchObject({ scheme: 'redis', username: 'us@er', password: 'p/w#', hosts: 'a:1,[::1]:2', path: '/3' });
    expect(parts.params.get('mode')).toBe('x');
    expect(parseHostList(parts.hosts, 9, 'nodes', 'redis')).toEqual([
      { host: 'a', port: 1 },
      { host: '::1', port: 2 },
    ]);
    expect(splitBackendUrl('redis://:only-password@h', 'redis', ['redis'])).toMatchObject({
      username: undefined,
      password: 'only-password',
    });
  });

  it.each(ambiguousUrls('postgres'))('refuses the ambiguous %s without echoing any part of the password', (url) => {
    const error = thrown(() => splitBackendUrl(url, 'postgres', ['postgres']));
    expect(error.message).toMatch(/ambiguous|percent-encode/i);
    expect(error.backend).toBe('postgres');
    for (const piece of ['S3cr3t', 'Zq7', 'ss/w', 'rd#x']) expect(error.message).not.toContain(piece);
  });

  it.each(ambiguousUrls('memory'))('createLockClient refuses %s for any scheme, before any factory runs', (url) => {
    const error = thrown(() => createLockClient(url));
    expect(error.message).not.toContain('S3cr3t');
  });

  it('a wrong scheme or bad percent-encoding is refused with the password masked', () => {
    expect(thrown(() => splitBackendUrl(`redis://u:${encodeURIComponent(password)}@h`, 'memcached', ['memcached'])).message).not.toContain(
      'S3cr3t',
    );
    expect(thrown(() => splitBackendUrl('redis://u:S3cr3t%zz@h', 'redis', ['redis'])).message).not.toContain('S3cr3t');
  });

  it('unknown and repeated parameters are refused, naming the backend and the known ones; prefix is left to core', () => {
    const allowed = new Set(['mode', 'prefix']);
    expect(urlParameters(new URLSearchParams('mode=a&prefix=p'), allowed, 'redis')).toEqual({ mode: 'a' });
    const unknown = thrown(() => urlParameters(new URLSearchParams('mdoe=a'), allowed, 'redis'));
    expect(unknown.message).toContain('"mdoe"');
    expect(unknown.message).toContain('mode, prefix');
    expect(unknown.backend).toBe('redis');
    expect(thrown(() => urlParameters(new URLSearchParams('mode=a&mode=b'), allowed, 'redis')).message).toContain('twice');
    expect(thrown(() => rejectUnknownNames('option', ['poool'], allowed, 'postgres')).argument).toBe('option "poool"');
  });
});

describe('adapter kit: values', () => {
  it('durations are integer milliseconds from a number or a URL string; fractions, negatives and overflows are refused', () => {
    expect(durationOption('t', 1500, 'x')).toBe(1500);
    expect(durationOption('t', '1500', 'x')).toBe(1500);
    expect(durationOption('t', '0', 'x', 0)).toBe(0);
    for (const bad of [1.5, '1.5', 0, -1, '', ' ', 'abc', Number.NaN, 2 ** 31, true, null]) {
      expect(() => durationOption('t', bad, 'x'), String(bad)).toThrow(InvalidArgumentError);
    }
    expect(thrown(() => durationOption('statementTimeoutMs', 2.5, 'postgres')).message).toMatch(
      /statementTimeoutMs.*positive integer.*2\.5.*postgres/,
    );
  });

  it('integers, booleans, choices, strings and host lists', () => {
    expect(integerOption('pool', '8', 'pg', 1, 10)).toBe(8);
    expect(() => integerOption('pool', {}, 'pg', 1, 10)).toThrow(/pool/);
    expect(booleanOption('cluster', 'true', 'redis')).toBe(true);
    expect(() => booleanOption('cluster', 'yes', 'redis')).toThrow(/true or false/);
    expect(choiceOption('mode', 'b', ['a', 'b'], 'x')).toBe('b');
    expect(() => choiceOption('mode', 'c', ['a', 'b'], 'x')).toThrow(/one of a, b/);
    expect(thrown(() => stringOption('password', 42, 'redis')).message).not.toContain('42');
    expect(hostListOption('nodes', ['a:1', { host: 'b', port: 2 }], 9, 'redis')).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 2 },
    ]);
    for (const bad of [[], ['a:0'], ['a:99999'], [{ host: '', port: 1 }], 'a:1']) {
      expect(() => hostListOption('nodes', bad, 9, 'redis'), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
  });
});
