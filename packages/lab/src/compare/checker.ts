import { checkFencedStore, type FencedStoreCheck } from './fenced-check.js';
import type { History, Interval } from './history.js';
import { checkRegisterHistory, type LinearizabilityResult } from './register-check.js';

export interface Overlap {
  readonly a: Interval;
  readonly b: Interval;
  readonly start: number;
  readonly end: number;
}

export interface CheckResult {
  readonly acquisitions: number;
  /** Pairs of holds by different clients that intersect in time: mutual exclusion broken. */
  readonly overlaps: number;
  readonly overlapPairs: Overlap[];
  readonly staleWritesAcceptedPlain: number;
  readonly staleWritesRejectedFenced: number;
  readonly staleWritesAcceptedFenced: number;
  /** The fenced store's end state and any fresh write it refused (fenced-check.ts). */
  readonly fencedStore: FencedStoreCheck;
  readonly lostNotices: number;
  /** For each loss notice with a known lease expiry: expiry - notice (positive = in time). */
  readonly lostNoticeLeadMs: number[];
  readonly acquisitionsPerSecond: number;
  /** The longest window with no holder, anywhere in the run (start-up included). */
  readonly maxUnavailableMs: number;
  /**
   * The longest window with no holder that touches a fault window, counted between holds only
   * (client start-up and wind-down excluded): what the fault cost in availability.
   */
  readonly faultUnavailableMs: number;
  /**
   * Whether the plain register's history is linearizable with each hold's read-modify-write as one
   * step (see register-ops.ts): what mutual exclusion promises the resource.
   */
  readonly linearizability: LinearizabilityResult;
}

/**
 * Overlaps (mutual exclusion broken): pairs of intervals of different clients whose open interiors
 * intersect. Touching intervals (a.end === b.start) are not overlaps: the release happened-before
 * the next acquire. Sweep over intervals sorted by start, O(n log n + overlaps).
 */
export function findOverlaps(intervals: readonly Interval[]): Overlap[] {
  const sorted = [...intervals].sort((x, y) => x.start - y.start);
  const overlaps: Overlap[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    for (let j = i + 1; j < sorted.length; j++) {
      const b = sorted[j]!;
      if (b.start >= a.end) break;
      if (a.client === b.client) continue;
      if (a.mode === 'read' && b.mode === 'read') continue; // readers share
      overlaps.push({ a, b, start: b.start, end: Math.min(a.end, b.end) });
    }
  }
  return overlaps;
}

/**
 * For a semaphore of `permits`: each hold that began while `permits` others were already inside is
 * one overlap (paired with the inside hold that ends first). With permits = 1 this finds the same
 * holds as findOverlaps, counted once per late arrival rather than once per pair.
 */
export function findExcess(intervals: readonly Interval[], permits: number): Overlap[] {
  const sorted = [...intervals].sort((x, y) => x.start - y.start);
  const inside: Interval[] = [];
  const excess: Overlap[] = [];
  for (const b of sorted) {
    // Touching is not overlapping: a hold that ended at b.start has left.
    for (let k = inside.length - 1; k >= 0; k--) if (inside[k]!.end <= b.start) inside.splice(k, 1);
    if (inside.length >= permits) {
      const a = inside.reduce((x, y) => (y.end < x.end ? y : x));
      excess.push({ a, b, start: b.start, end: Math.min(a.end, b.end) });
    }
    inside.push(b);
  }
  return excess;
}

/**
 * The longest stretch within [startedAt, endedAt] when no client held the lock: a CP system's
 * election shows here. Gaps are measured between the union of holds.
 */
export function longestGap(intervals: readonly Interval[], startedAt: number, endedAt: number): number {
  const sorted = [...intervals].sort((x, y) => x.start - y.start);
  let cursor = startedAt;
  let longest = 0;
  for (const i of sorted) {
    if (i.start > cursor) longest = Math.max(longest, i.start - cursor);
    cursor = Math.max(cursor, i.end);
  }
  if (endedAt > cursor) longest = Math.max(longest, endedAt - cursor);
  return longest;
}

/** The longest gap between holds that intersects one of `windows` (no edges: from the first hold to the last). */
export function longestGapDuring(intervals: readonly Interval[], windows: readonly { start: number; end: number }[]): number {
  const sorted = [...intervals].sort((x, y) => x.start - y.start);
  let cursor: number | undefined;
  let longest = 0;
  for (const i of sorted) {
    if (cursor !== undefined && i.start > cursor) {
      const gap = { start: cursor, end: i.start };
      if (windows.some((w) => w.start <= gap.end && w.end >= gap.start)) longest = Math.max(longest, gap.end - gap.start);
    }
    cursor = Math.max(cursor ?? i.end, i.end);
  }
  return longest;
}

export function check(history: History): CheckResult {
  const overlaps = (history.permits ?? 1) > 1 ? findExcess(history.intervals, history.permits!) : findOverlaps(history.intervals);
  const lost = history.intervals.filter((i) => i.lostNoticeAt !== undefined);
  const lead = lost.filter((i) => i.leaseExpiresAt !== undefined).map((i) => (i.leaseExpiresAt as number) - (i.lostNoticeAt as number));
  const seconds = Math.max(1e-3, (history.endedAt - history.startedAt) / 1000);
  return {
    acquisitions: history.intervals.length,
    overlaps: overlaps.length,
    overlapPairs: overlaps,
    staleWritesAcceptedPlain: history.plainWrites.filter((w) => w.stale && w.accepted).length,
    staleWritesRejectedFenced: history.fencedWrites.filter((w) => w.stale && !w.accepted).length,
    staleWritesAcceptedFenced: history.fencedWrites.filter((w) => w.stale && w.accepted).length,
    fencedStore: checkFencedStore(history),
    lostNotices: lost.length,
    lostNoticeLeadMs: lead,
    acquisitionsPerSecond: history.intervals.length / seconds,
    maxUnavailableMs: Math.round(longestGap(history.intervals, history.startedAt, history.endedAt)),
    faultUnavailableMs: Math.round(longestGapDuring(history.intervals, history.faults)),
    linearizability: checkRegisterHistory(history.plainOps),
  };
}
