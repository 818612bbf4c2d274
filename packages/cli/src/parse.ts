import { UsageError } from './usage-error.js';

/** The options every command takes (util.parseArgs shapes). */
export const commonOptions = {
  url: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * util.parseArgs runs in strict mode; its errors (an unknown flag, a missing value) become usage
 * errors that carry the command's usage line.
 */
export function usageErrorOf(error: unknown, usage: string): UsageError {
  const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
  return new UsageError(message.replace(/\. To specify a positional argument.*$/, ''), usage);
}
