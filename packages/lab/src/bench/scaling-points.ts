import type { SliceSchedule } from './interleave.js';

/** Which points of each curve `npm run bench -- --scaling` measures. */
export interface ScalingPoints {
  /** Workers on one key (the contention curve). */
  readonly workers: readonly number[];
  /** Locks held at once with auto-renew (the held-locks curve). */
  readonly held: readonly number[];
  /** Concurrent acquire/release loops on distinct keys, one client (the keys-in-flight curve). */
  readonly keys: readonly number[];
  /** The slices every subject of one point runs (interleave.ts). */
  readonly schedule: SliceSchedule;
  /** Held locks: their ttl (a renewal every ttl / 3) and how many ttl periods the window lasts. */
  readonly heldTtlMs: number;
  readonly heldPeriods: number;
}

export const fullPoints: ScalingPoints = {
  workers: [1, 2, 5, 10, 20, 50, 100, 200],
  held: [1_000, 10_000, 100_000],
  keys: [1, 10, 100, 1_000],
  schedule: { rounds: 4, sliceMs: 250 },
  heldTtlMs: 3_000,
  heldPeriods: 2,
};

/** `--quick`: three points of contention, one of held locks, two of keys, short slices. */
export const quickPoints: ScalingPoints = {
  workers: [1, 10, 50],
  held: [1_000],
  keys: [1, 10],
  schedule: { rounds: 2, sliceMs: 200 },
  heldTtlMs: 1_500,
  heldPeriods: 2,
};

/**
 * Parses a list option: comma-separated positive integers, or `none` to skip that curve.
 * Throws (before any server starts) on anything else.
 */
export function parsePointList(option: string, text: string): number[] {
  if (text.trim() === 'none') return [];
  const values = text.split(',').map((part) => part.trim());
  const numbers = values.map(Number);
  const bad = values.find((value, index) => !/^\d+$/.test(value) || numbers[index]! < 1);
  if (bad !== undefined) throw new TypeError(`--${option}: "${bad}" is not a positive whole number (a list like 1,10,100, or none)`);
  return [...new Set(numbers)].sort((a, b) => a - b);
}

function onePoint(option: string, text: string): number {
  const [value, ...more] = parsePointList(option, text);
  if (value === undefined || more.length > 0) throw new TypeError(`--${option}: one positive whole number (milliseconds), not "${text}"`);
  return value;
}

/** The points of a run: `--quick` or the full set, each list replaced where its option is given. */
export function choosePoints(
  quick: boolean,
  options: { points?: string; held?: string; keys?: string; 'held-ttl'?: string },
): ScalingPoints {
  const base = quick ? quickPoints : fullPoints;
  return {
    ...base,
    ...(options.points === undefined ? {} : { workers: parsePointList('points', options.points) }),
    ...(options.held === undefined ? {} : { held: parsePointList('held', options.held) }),
    ...(options.keys === undefined ? {} : { keys: parsePointList('keys', options.keys) }),
    ...(options['held-ttl'] === undefined ? {} : { heldTtlMs: onePoint('held-ttl', options['held-ttl']) }),
  };
}
