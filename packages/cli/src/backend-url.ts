import { UsageError } from './usage-error.js';

/** The backend URL to use and the secrets in it, which no output may ever show. */
export interface BackendUrl {
  readonly text: string;
  readonly secrets: readonly string[];
}

/**
 * Picks the backend from --url, else DEADBOLT_URL. memory:// is refused: its locks live inside one
 * process, and deadbolt is a process of its own, so no other deadbolt could ever see them.
 */
export function resolveBackendUrl(given: string | undefined, env: NodeJS.ProcessEnv, usage: string): BackendUrl {
  const text = given ?? env.DEADBOLT_URL;
  if (text === undefined || text === '') {
    throw new UsageError('no backend: give --url or set DEADBOLT_URL (e.g. redis://127.0.0.1:6379)', usage);
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text)?.[1]?.toLowerCase();
  if (scheme === 'memory') {
    throw new UsageError(
      'memory:// holds locks inside one process, so no other deadbolt would ever see them: use redis://, postgres://, zookeeper:// or memcached://',
      usage,
    );
  }
  return { text, secrets: secretsOf(text) };
}

/** The password of the URL's user info and any token-like query value, as written and decoded. */
export function secretsOf(text: string): string[] {
  const found: string[] = [];
  const userInfo = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@/i.exec(text)?.[1];
  const colon = userInfo?.indexOf(':') ?? -1;
  if (userInfo !== undefined && colon >= 0) found.push(userInfo.slice(colon + 1));
  const query = /\?([^#]*)/.exec(text)?.[1] ?? '';
  for (const pair of query.split('&')) {
    const [name = '', value = ''] = pair.split('=');
    if (/pass|secret|token|key/i.test(name) && name !== 'prefix') found.push(value);
  }
  const variants = found.flatMap((secret) => [secret, safeDecode(secret), encodeURIComponent(safeDecode(secret))]);
  return [...new Set(variants.filter((secret) => secret !== ''))];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
