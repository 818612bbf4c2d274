import { redactUrlText } from '../../adapter/url-options.js';
import type { LastRun, RunOutcome } from '../../api/run-once.js';

/** The longest error message a record keeps: a record is a status line, not a log. */
const maxMessageChars = 500;

/** The stored form: plain JSON with epoch milliseconds. */
interface StoredRun {
  readonly runner: string;
  readonly started: number;
  readonly finished?: number;
  readonly fence?: number;
  readonly outcome: RunOutcome;
  readonly error?: string;
}

export function encodeRun(run: StoredRun): string {
  return JSON.stringify(run);
}

/**
 * The message of what `fn` threw, and only that: a stack names files and lines of the app, and a
 * message may quote a connection URL, whose credentials are masked.
 */
export function errorMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const firstLine = text.split('\n', 1)[0] ?? '';
  return redactCredentials(firstLine).slice(0, maxMessageChars);
}

function redactCredentials(text: string): string {
  return text.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s/@]*@/gi, (url) => redactUrlText(url));
}

/** A record read back; undefined when the text is not one (a foreign value under the record's key). */
export function decodeRun(text: string): LastRun | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const run = value as Partial<StoredRun>;
  if (typeof run.runner !== 'string' || typeof run.started !== 'number' || typeof run.outcome !== 'string') return undefined;
  return {
    runner: run.runner,
    startedAt: new Date(run.started),
    finishedAt: typeof run.finished === 'number' ? new Date(run.finished) : undefined,
    fence: typeof run.fence === 'number' ? run.fence : undefined,
    outcome: run.outcome,
    ...(typeof run.error === 'string' ? { error: run.error } : {}),
  };
}
