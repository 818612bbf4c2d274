import { UsageError } from './usage-error.js';

/** The longest duration any option takes: about 24.8 days, the most a Node timer can wait. */
const maxMs = 2_147_483_647;

/**
 * Parses a duration option given in whole milliseconds (`--ttl 30000`). Units are not accepted:
 * one spelling, so a script never wonders whether `5` meant seconds.
 */
export function parseMs(option: string, text: string | undefined, fallback: number, usage: string, minimum = 1): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text)) throw new UsageError(`--${option} takes whole milliseconds (e.g. --${option} 5000), not "${text}"`, usage);
  const value = Number(text);
  if (value < minimum) throw new UsageError(`--${option} must be at least ${minimum} ms, not ${value}`, usage);
  if (value > maxMs) throw new UsageError(`--${option} must be at most ${maxMs} ms, not ${value}`, usage);
  return value;
}
