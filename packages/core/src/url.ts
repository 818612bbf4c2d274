import { InvalidArgumentError } from './errors.js';

/** A URL for messages and logs: the password and any token-like query values are masked. */
export function redactUrl(url: URL): string {
  const copy = new URL(url.href);
  if (copy.password) copy.password = '***';
  for (const name of [...copy.searchParams.keys()]) {
    if (/pass|secret|token|key/i.test(name) && name !== 'prefix') copy.searchParams.set(name, '***');
  }
  return copy.href;
}

/** Parses a backend URL, or throws InvalidArgumentError without echoing credentials. */
export function parseBackendUrl(text: string): URL {
  try {
    return new URL(text);
  } catch {
    const shown = text.replace(/\/\/[^@/]*@/, '//***@');
    throw new InvalidArgumentError(
      'url',
      `"${shown}" is not a URL; expected e.g. memory://, redis://127.0.0.1:6379?mode=setnx, postgres://user:pass@host:5432/db`,
    );
  }
}
