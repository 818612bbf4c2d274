import { describe, expect, it } from 'vitest';
import { check, findExcess, findOverlaps, longestGap, longestGapDuring } from '../src/compare/checker.js';
import { outcomeOf } from '../src/compare/outcome.js';
import { row } from '../src/compare/scenario-kit.js';
import type { History, Interval } from '../src/compare/history.js';
import type { RegisterOp } from '../src/compare/register-ops.js';
import { FencedStore, memoryRegister } from '../src/compare/fenced-store.js';
import { PlainRegister } from '../src/compare/stores.js';

const iv = (client: string, start: number, end: number, fence?: number): Interval => ({ client, start, end, fence, outcome: 'released' });
const hist = (intervals: Interval[], extra: Partial<History> = {}): History => ({
  intervals,
  faults: [],
  plainWrites: [],
  fencedWrites: [],
  startedAt: 0,
  endedAt: 100,
  ...extra,
});

describe('compare checker', () => {
  it('counts an overlap between two clients', () => {
    const r = check(hist([iv('a', 0, 50, 1), iv('b', 40, 80, 2)]));
    expect(r.overlaps).toBe(1);
    expect(r.overlapPairs[0]).toMatchObject({ start: 40, end: 50 });
  });

  it('finds no overlap in disjoint holds', () => {
    expect(check(hist([iv('a', 0, 10), iv('b', 20, 30), iv('a', 40, 50)])).overlaps).toBe(0);
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

  it('plain register accepts a stale fence; the fenced store (createMemoryFenceGuard) refuses it and ends with the newest write', async () => {
    const plain = new PlainRegister();
    const fenced = new FencedStore('memory', 'memory', memoryRegister());
    expect(plain.write('new', 2, 1)).toBe(true);
    expect(await fenced.write('new', 2, 1)).toBe(true);
    expect(plain.write('old', 1, plain.read() + 1)).toBe(true);
    expect(await fenced.write('old', 1, (await fenced.read()) + 1)).toBe(false);
    // The same holder again is not stale.
    expect(plain.write('new', 2, 3)).toBe(true);
    expect(await fenced.write('new', 2, 3)).toBe(true);
    expect(plain.read()).toBe(3);
    const report = await fenced.finish();
    expect(report).toMatchObject({ finalValue: 3, finalFence: 2 });
    const result = check(hist([], { plainWrites: plain.writes, fencedWrites: fenced.writes, fencedStore: report }));
    expect(result.staleWritesAcceptedPlain).toBe(1);
    expect(result.staleWritesRejectedFenced).toBe(1);
    expect(result.staleWritesAcceptedFenced).toBe(0);
    expect(result.fencedStore).toMatchObject({ endsWithNewest: true, freshWritesRefused: 0 });
  });

  it('a fenced store that lets a stale write through is counted, and its row is not as predicted', async () => {
    // A mutant store with no check: the write lands whatever its fence.
    let value = 0;
    let recorded: number | undefined;
    const unchecked = new FencedStore('memory', 'unchecked', {
      read: async () => value,
      write: async (f, v) => {
        value = v;
        recorded = f;
      },
      final: async () => ({ value, fence: recorded }),
      close: async () => {},
    });
    await unchecked.write('new', 2, 1);
    await unchecked.write('old', 1, 1);
    const history = hist([iv('new', 0, 50, 2), iv('old', 40, 80, 1)], {
      fencedWrites: unchecked.writes,
      fencedStore: await unchecked.finish(),
    });
    const r = row('redis', 'setnx', 'client-pause', history, 'x', (c) => c.overlaps > 0 && c.staleWritesAcceptedFenced === 0);
    expect(r.check.staleWritesAcceptedFenced).toBe(1);
    expect(r.check.fencedStore.endsWithNewest).toBe(false);
    expect(r.contradictions.join()).toContain('NOT the newest holder');
    expect(r.matched).toBe(false);
  });

  it("the fenced store's own errors are the harness's failure, never a refusal", async () => {
    const broken = new FencedStore('memory', 'broken', {
      read: async () => 0,
      write: async () => {
        throw new Error('connection reset');
      },
      final: async () => ({ value: 0, fence: undefined }),
      close: async () => {},
    });
    await expect(broken.write('a', 1, 1)).rejects.toThrow('connection reset');
    expect(broken.writes).toEqual([]);
    // A write with no fence (Memcached) is not sent and not recorded.
    expect(await broken.write('a', undefined, 1)).toBe(false);
  });

  it('reports lost notices and how long before expiry they came', () => {
    const lost: Interval = { client: 'a', start: 0, end: 30, fence: 1, outcome: 'lost', lostNoticeAt: 30, leaseExpiresAt: 50 };
    const r = check(hist([lost, iv('b', 60, 70, 2)]));
    expect(r.lostNotices).toBe(1);
    expect(r.lostNoticeLeadMs).toEqual([20]);
  });

  it("counts only the gaps between holds that touch a fault window as the fault's unavailability", () => {
    const holds = [iv('a', 100, 200), iv('b', 300, 400), iv('c', 2000, 2100)];
    // Start-up (0..100) is never counted; 200..300 misses the window; 400..2000 touches it.
    expect(longestGapDuring(holds, [{ start: 1000, end: 1100 }])).toBe(1600);
    expect(longestGapDuring(holds, [{ start: 250, end: 260 }])).toBe(100);
    expect(longestGapDuring(holds, [{ start: 0, end: 50 }])).toBe(0);
  });

  it('names a run overlapped, unavailable or exclusive', () => {
    const fault = { label: 'f', start: 1000, end: 1100 };
    const outcome = (intervals: Interval[]) =>
      outcomeOf(row('zookeeper', 'm', 's', hist(intervals, { faults: [fault], endedAt: 3000 }), 'x', () => true));
    expect(outcome([iv('a', 0, 500), iv('b', 400, 900)])).toBe('overlapped');
    expect(outcome([iv('a', 0, 900), iv('b', 2100, 2200)])).toBe('unavailable');
    expect(outcome([iv('a', 0, 1000), iv('b', 1010, 2200)])).toBe('exclusive');
    expect(outcome([])).toBe('unavailable');
  });

  it('read-write lock: readers may share, a writer overlapping anyone is an overlap', () => {
    const r = (client: string, start: number, end: number): Interval => ({ ...iv(client, start, end), mode: 'read' });
    const w = (client: string, start: number, end: number): Interval => ({ ...iv(client, start, end), mode: 'write' });
    expect(findOverlaps([r('a', 0, 50), r('b', 10, 60), r('c', 20, 30)])).toHaveLength(0);
    expect(findOverlaps([r('a', 0, 50), w('b', 40, 60)])).toHaveLength(1);
    expect(findOverlaps([w('a', 0, 50), w('b', 40, 60)])).toHaveLength(1);
  });

  it('semaphore: only holds beyond the permits count, touching holds have left', () => {
    const holds = [iv('a', 0, 100), iv('b', 10, 100), iv('c', 20, 30), iv('d', 30, 40)];
    expect(findExcess(holds, 3)).toHaveLength(0);
    expect(findExcess(holds, 2).map((o) => o.b.client)).toEqual(['c', 'd']);
    expect(check(hist(holds, { permits: 2 })).overlaps).toBe(2);
    expect(check(hist(holds, { permits: 4 })).overlaps).toBe(0);
  });

  describe('linearizability agrees with the other verdicts', () => {
    const op = (process: string, f: 'read' | 'write', value: number, invoke: number): RegisterOp => ({
      process,
      f,
      value,
      invoke,
      complete: invoke + 1,
      outcome: 'ok',
    });
    // a reads 0 and writes 1 inside its hold; b reads 1 and writes 2 inside its own.
    const serial = [op('a', 'read', 0, 1), op('a', 'write', 1, 40), op('b', 'read', 1, 61), op('b', 'write', 2, 90)];
    // a's read-modify-write straddles b's whole one: both read 0 and write 1.
    const lostUpdate = [op('a', 'read', 0, 1), op('b', 'read', 0, 61), op('b', 'write', 1, 70), op('a', 'write', 1, 90)];
    const staleWrite = { client: 'a', at: 90, fence: 1, accepted: true, stale: true };
    const fine = () => true;

    it('an exclusive run with a linearizable history is as predicted; with a non-linearizable one it is not, and says why', () => {
      const holds = [iv('a', 0, 50, 1), iv('b', 60, 100, 2)];
      const ok = row('zookeeper', 'm', 's', hist(holds, { plainOps: serial }), 'x', fine);
      expect(outcomeOf(ok)).toBe('exclusive');
      expect(ok.check.linearizability.linearizable).toBe(true);
      expect(ok.matched).toBe(true);
      expect(ok.contradictions).toEqual([]);
      const bad = row('zookeeper', 'm', 's', hist(holds, { plainOps: lostUpdate }), 'x', fine);
      expect(bad.check.linearizability.linearizable).toBe(false);
      expect(bad.matched).toBe(false);
      expect(bad.contradictions.join()).toMatch(/kept exclusion but its register history is not linearizable/);
    });

    it('a stale write accepted by the plain register must come with a non-linearizable history', () => {
      const holds = [iv('a', 0, 100, 1), iv('b', 60, 80, 2)];
      const ok = row('redis', 'm', 's', hist(holds, { plainOps: lostUpdate, plainWrites: [staleWrite] }), 'x', fine);
      expect(ok.check.linearizability.linearizable).toBe(false);
      expect(ok.contradictions).toEqual([]);
      expect(ok.matched).toBe(true);
      const bad = row('redis', 'm', 's', hist(holds, { plainOps: serial, plainWrites: [staleWrite] }), 'x', fine);
      expect(bad.matched).toBe(false);
      expect(bad.contradictions.join()).toMatch(/took 1 stale write\(s\), yet its history was found linearizable/);
    });

    it('an undecided verdict contradicts nothing, and a history with no recorded operations is undecided', () => {
      const r = row('zookeeper', 'm', 's', hist([iv('a', 0, 50, 1)]), 'x', fine);
      expect(r.check.linearizability).toMatchObject({ linearizable: 'unknown', reason: 'no register operations were recorded' });
      expect(r.matched).toBe(true);
    });
  });
});
