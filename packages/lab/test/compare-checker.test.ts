import { describe, expect, it } from 'vitest';
import { check, findOverlaps, longestGap } from '../src/compare/checker.js';
import type { History, Interval } from '../src/compare/history.js';
import { FencedRegister, PlainRegister } from '../src/compare/stores.js';

const iv = (client: string, start: number, end: number, fence?: number): Interval => ({ client, start, end, fence, outcome: 'released' });
const hist = (intervals: Interval[], extra: Partial<History> = {}): History => ({
  intervals, faults: [], plainWrites: [], fencedWrites: [], startedAt: 0, endedAt: 100, ...extra,
});

describe('compare checker', () => {
  it('counts an overlap between two clients', () => {
    const r = check(hist([iv('a', 0, 50, 1), iv('b', 40, 80, 2)]));
    expect(r.violations).toBe(1);
    expect(r.overlaps[0]).toMatchObject({ start: 40, end: 50 });
  });

  it('finds no overlap in disjoint holds', () => {
    expect(check(hist([iv('a', 0, 10), iv('b', 20, 30), iv('a', 40, 50)])).violations).toBe(0);
  });

  it('does not count touching intervals as overlaps', () => {
    expect(findOverlaps([iv('a', 0, 10), iv('b', 10, 20), iv('c', 20, 30)])).toHaveLength(0);
  });

  it('counts a hold nested inside a long one, and every pair once', () => {
    expect(findOverlaps([iv('a', 0, 100), iv('b', 10, 20), iv('c', 30, 40)])).toHaveLength(2);
  });

  it('measures the longest window with no holder, including the edges', () => {
    expect(longestGap([iv('a', 5, 10), iv('b', 8, 20), iv('c', 60, 70)], 0, 100)).toBe(40);
    expect(longestGap([], 0, 100)).toBe(100);
  });

  it('plain store accepts a stale fence, fenced store rejects it', () => {
    const plain = new PlainRegister();
    const fenced = new FencedRegister();
    for (const r of [plain, fenced]) {
      expect(r.write('new', 2, 1)).toBe(true);
      r.write('old', 1, r.read() + 1);
      expect(r.write('new', 2, 3)).toBe(true); // the same holder again is not stale
    }
    expect(plain.read()).toBe(3);
    const result = check(hist([], { plainWrites: plain.writes, fencedWrites: fenced.writes }));
    expect(result.staleWritesAcceptedPlain).toBe(1);
    expect(result.staleWritesRejectedFenced).toBe(1);
    expect(result.staleWritesAcceptedFenced).toBe(0);
  });

  it('reports lost notices and how long before expiry they came', () => {
    const lost: Interval = { client: 'a', start: 0, end: 30, fence: 1, outcome: 'lost', lostNoticeAt: 30, leaseExpiresAt: 50 };
    const r = check(hist([lost, iv('b', 60, 70, 2)]));
    expect(r.lostNotices).toBe(1);
    expect(r.lostNoticeLeadMs).toEqual([20]);
  });
});
