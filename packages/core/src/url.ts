import { rejectAmbiguousUrl, redactUrlText } from './adapter/url-options.js';
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

/**
 * Parses a backend URL, or throws InvalidArgumentError without echoing credentials.
 * Host lists (`redis://a:6379,b:6379`, `zookeeper://z1:2181,z2:2181/path`) are not valid WHATWG
 * URLs, so they parse with the first host standing in; the backend reads the whole list from the
 * text it is also given (BackendConfig.urlText). A URL whose password hides in its host or path
 * (an unencoded '/', '?', '#' or '@') is refused for every backend: see rejectAmbiguousUrl.
 */
export function parseBackendUrl(text: string): URL {
  rejectAmbiguousUrl(text);
  try {
    return new URL(text);
  } catch {
    const hostList = /^([a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?)([^/?#]*,[^/?#]*)(.*)$/i.exec(text);
    if (hostList) {
      try {
        return new URL(`${hostList[1]}${hostList[2]!.split(',')[0]}${hostList[3]}`);
      } catch {
        // fall through to the error below
      }
    }
    const shown = redactUrlText(text);
    throw new InvalidArgumentError(
      'url',
      `"${shown}" is not a URL; expected e.g. memory://, redis://127.0.0.1:6379?mode=setnx, postgres://user:pass@host:5432/db`,
    );
  }
}
