import { InvalidArgumentError } from '../errors.js';
import { describeValue, maxDurationMs } from '../validation.js';

/**
 * The adapter kit's URL and option parsing: one set of rules for every backend, so that a duration,
 * a host list, an unknown parameter or a password reads and fails the same way everywhere. Every
 * error is an InvalidArgumentError naming the backend, thrown before any I/O, and none of them
 * echoes a credential.
 */

/** A backend URL split into its parts, as written (host lists are not valid WHATWG URLs). */
export interface BackendUrlParts {
  /** Lower-case, without the ':'. */
  readonly scheme: string;
  /** Decoded user name, when the URL has one. */
  readonly username: string | undefined;
  /** Decoded password, when the URL has one. Never put it in a message. */
  readonly password: string | undefined;
  /** The host list as written: `a:6379,b:6379`, `[::1]:2181`, or '' for none. */
  readonly hosts: string;
  /** The path as written ('' or starting with '/'). */
  readonly path: string;
  readonly params: URLSearchParams;
}

/**
 * A URL for messages: everything between the scheme and the LAST '@' is masked, because a
 * malformed URL's password may itself contain '/', '?', '#' or '@' (often why it is malformed), so
 * its end cannot be found any other way.
 */
export function redactUrlText(text: string): string {
  return text.replace(/^([^:/?#]*:(?:\/\/)?).*@/s, '$1***@');
}

/**
 * Refuses URLs whose reading is ambiguous, before anything parses them: a '#', or an '@' after the
 * host, means an unencoded '/', '?', '#' or '@' inside a password. WHATWG parsing would then take
 * part of the password as the host (`postgres://u:S3cr3t-p@ss/w:rd#x@127.0.0.1/db` names host
 * "ss"), send it to DNS and print it in errors. Two '@' in the authority are refused for the same
 * reason. The message shows only the scheme.
 */
export function rejectAmbiguousUrl(text: string, backend?: string): void {
  const match = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)([^#]*)(#.*)?$/is.exec(text);
  if (!match) return;
  const [, scheme = '', authority = '', rest = '', fragment] = match;
  const atSigns = authority.split('@').length - 1;
  if (fragment !== undefined || rest.includes('@') || atSigns > 1) {
    throw new InvalidArgumentError(
      'url',
      `the ${scheme}:// URL is ambiguous: a '#', or an '@' after the host, means the user name or password holds an unencoded ` +
        `'/', '?', '#' or '@'. Percent-encode them (%2F %3F %23 %40), e.g. with encodeURIComponent(password)`,
      { backend },
    );
  }
}

/**
 * Splits `scheme://[user[:password]@]host[:port][,host2[:port2]...][/path][?query]` for one of
 * `schemes`. Ambiguous URLs (see rejectAmbiguousUrl) and other schemes are refused.
 */
export function splitBackendUrl(input: string | URL, backend: string, schemes: readonly string[]): BackendUrlParts {
  const text = typeof input === 'string' ? input : input.href;
  rejectAmbiguousUrl(text, backend);
  const match = /^([a-z][a-z0-9+.-]*):\/\/(?:([^@/?#]*)@)?([^/?#]*)([^?#]*)(?:\?(.*))?$/is.exec(text);
  const scheme = match?.[1]?.toLowerCase();
  if (!match || scheme === undefined || !schemes.includes(scheme)) {
    const expected = schemes.map((name) => `${name}://`).join(' or ');
    throw new InvalidArgumentError('url', `"${redactUrlText(text)}" is not a ${expected} URL`, { backend });
  }
  const [, , userInfo, hosts = '', path = '', query = ''] = match;
  let username: string | undefined;
  let password: string | undefined;
  if (userInfo !== undefined && userInfo !== '') {
    const colon = userInfo.indexOf(':');
    try {
      username = decodeURIComponent(colon < 0 ? userInfo : userInfo.slice(0, colon)) || undefined;
      password = colon < 0 ? undefined : decodeURIComponent(userInfo.slice(colon + 1));
    } catch {
      throw new InvalidArgumentError('url', `malformed percent-encoding in the user name or password of the ${scheme}:// URL`, { backend });
    }
  }
  return { scheme, username, password, hosts, path, params: new URLSearchParams(query) };
}

/**
 * Refuses any name not in `allowed`: `kind` is 'URL parameter' or 'option'. A typo must not be
 * silently ignored. Repeated URL parameters are refused too (which one would win is a guess).
 */
export function rejectUnknownNames(
  kind: 'URL parameter' | 'option',
  names: Iterable<string>,
  allowed: ReadonlySet<string>,
  backend: string,
): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (!allowed.has(name)) {
      throw new InvalidArgumentError(`${kind} "${name}"`, `unknown; the ${backend} ${kind}s are ${[...allowed].join(', ')}`, { backend });
    }
    if (kind === 'URL parameter' && seen.has(name)) throw new InvalidArgumentError(`${kind} "${name}"`, 'given twice', { backend });
    seen.add(name);
  }
}

/** URL parameters as an options record (the object form's shape): values stay strings, parsed by the option readers. */
export function urlParameters(
  params: URLSearchParams,
  allowed: ReadonlySet<string>,
  backend: string,
  ignored: readonly string[] = ['prefix'],
): Record<string, string> {
  rejectUnknownNames('URL parameter', params.keys(), allowed, backend);
  const result: Record<string, string> = {};
  for (const [name, value] of params) if (!ignored.includes(name)) result[name] = value;
  return result;
}

/** The object form's entries that are not undefined (an explicit undefined means "use the default"). */
export function definedEntries(record: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}

function asNumber(value: unknown): unknown {
  return typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
}

/**
 * A duration in milliseconds, from the object form (a number) or a URL (a numeric string): an
 * integer in [min, 2^31-1], as core's ttlMs and waitMs are (setTimeout's range; fractions refused
 * rather than rounded one way or the other).
 */
export function durationOption(name: string, value: unknown, backend: string, min: 0 | 1 = 1): number {
  const number = asNumber(value);
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > maxDurationMs) {
    const range = min === 0 ? '0 or a positive integer' : 'a positive integer';
    throw new InvalidArgumentError(name, `expected ${range} number of milliseconds up to ${maxDurationMs}, got ${describeValue(value)}`, {
      backend,
    });
  }
  return number;
}

/** An integer in [min, max] (a pool size, a database index). */
export function integerOption(name: string, value: unknown, backend: string, min: number, max: number): number {
  const number = asNumber(value);
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
    throw new InvalidArgumentError(name, `expected an integer in [${min}, ${max}], got ${describeValue(value)}`, { backend });
  }
  return number;
}

/** A finite number in [min, max) (a ratio such as redlock's drift factor). */
export function fractionOption(name: string, value: unknown, backend: string, min: number, maxExclusive: number): number {
  const number = asNumber(value);
  if (typeof number !== 'number' || !Number.isFinite(number) || number < min || number >= maxExclusive) {
    throw new InvalidArgumentError(name, `expected a number in [${min}, ${maxExclusive}), got ${describeValue(value)}`, { backend });
  }
  return number;
}

/** true or false (or "true"/"false" from a URL). */
export function booleanOption(name: string, value: unknown, backend: string): boolean {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new InvalidArgumentError(name, `expected true or false, got ${describeValue(value)}`, { backend });
}

/** One of a fixed set of names (a mode). */
export function choiceOption<T extends string>(name: string, value: unknown, choices: readonly T[], backend: string): T {
  if (typeof value === 'string' && (choices as readonly string[]).includes(value)) return value as T;
  throw new InvalidArgumentError(name, `${describeValue(value)} is not one of ${choices.join(', ')}`, { backend });
}

/** A string. The message shows only the type, never the value (it may be a password). */
export function stringOption(name: string, value: unknown, backend: string): string {
  if (typeof value === 'string') return value;
  throw new InvalidArgumentError(name, `expected a string, got ${typeof value}`, { backend });
}

export interface HostAddress {
  readonly host: string;
  readonly port: number;
}

/** `host`, `host:port` or `[v6]:port`; a missing port is `defaultPort`. */
export function parseHostPort(text: string, defaultPort: number, name: string, backend: string): HostAddress {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s/@]+))(?::(\d{1,5}))?$/.exec(text.trim());
  const port = match?.[3] === undefined ? defaultPort : Number(match[3]);
  if (!match || port < 1 || port > 65535)
    throw new InvalidArgumentError(name, `${describeValue(text)} is not host[:port] with a port in 1..65535`, { backend });
  return Object.freeze({ host: match[1] ?? match[2] ?? '', port });
}

/** `a:1,b:2` as written in a URL's authority. */
export function parseHostList(text: string, defaultPort: number, name: string, backend: string): HostAddress[] {
  return text.split(',').map((host) => parseHostPort(host, defaultPort, name, backend));
}

/** The object form of a host list: `"host:port"` strings or `{ host, port }` objects, at least one. */
export function hostListOption(name: string, value: unknown, defaultPort: number, backend: string): HostAddress[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidArgumentError(name, 'expected a non-empty array of "host:port" or { host, port }', { backend });
  }
  return value.map((entry: unknown) => {
    if (typeof entry === 'string') return parseHostPort(entry, defaultPort, name, backend);
    if (entry !== null && typeof entry === 'object') {
      const { host, port } = entry as { host?: unknown; port?: unknown };
      if (typeof host === 'string' && host !== '' && typeof port === 'number' && Number.isInteger(port) && port > 0 && port < 65536) {
        return Object.freeze({ host, port });
      }
    }
    throw new InvalidArgumentError(name, `bad entry ${describeValue(entry)}; expected "host:port" or { host, port }`, { backend });
  });
}
