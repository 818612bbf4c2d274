import { createLockClient, InvalidArgumentError } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';

/** What each adapter package passes: its scheme and its own URL parser. */
export interface AmbiguousUrlOptions {
  /** The URL scheme, also the backend name the error must carry (`redis`, `postgres`, ...). */
  readonly backend: string;
  /** The adapter's option resolver (`resolveRedisOptions`, ...): it must throw for each URL. */
  readonly resolve: (url: string) => unknown;
  /** The URLs to refuse; default: the five password shapes below under `backend://`. */
  readonly urls?: readonly string[];
}

/** The pieces of the password in the default URLs: none may be echoed in an error. */
const secretPieces = ['S3cr3t', 'Zq7', 'ss/w', 'rd#x'];

/** A password holding an unencoded '/', '?', '#' or '@' (a probe's cases). */
export function ambiguousUrls(scheme: string): string[] {
  return [
    `${scheme}://u:S3cr3t-p@ss/w:rd#x@127.0.0.1/db`,
    `${scheme}://u:S3cr3t/Zq7@127.0.0.1:1`,
    `${scheme}://u:S3cr3t?Zq7@127.0.0.1:1`,
    `${scheme}://u:S3cr3t#Zq7@127.0.0.1:1`,
    `${scheme}://u:S3cr3t@Zq7@127.0.0.1:1`,
  ];
}

/**
 * For one adapter: a password holding an unencoded '/', '?', '#' or '@' must not be
 * read as a host (sent to DNS, printed in errors). Each URL is refused before any I/O with an
 * InvalidArgumentError naming the backend, through the adapter and through createLockClient, and no
 * piece of the password is echoed.
 */
export function describeAmbiguousUrls(options: AmbiguousUrlOptions): void {
  const { backend, resolve } = options;
  describe(`${backend}: ambiguous URLs`, () => {
    it.each(options.urls ?? ambiguousUrls(backend))(
      '%s is an InvalidArgumentError naming the backend, through the adapter and through createLockClient',
      (url) => {
        const fromAdapter = thrown(() => resolve(url));
        for (const error of [fromAdapter, thrown(() => createLockClient(url))]) {
          expect(error).toBeInstanceOf(InvalidArgumentError);
          for (const piece of secretPieces) expect(error.message).not.toContain(piece);
        }
        expect((fromAdapter as InvalidArgumentError).backend).toBe(backend);
      },
    );
  });
}

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}
