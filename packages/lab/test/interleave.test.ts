import { describe, expect, it } from 'vitest';
import { runInterleaved } from '../src/bench/interleave.js';
import type { BenchRow, Subject } from '../src/bench/subject.js';
import type { Slicer } from '../src/bench/workloads.js';

/** The bench's scheduler alone (no server): slices alternate, failures drop one subject, everything is closed. */
function fakeSlicer(name: string, log: string[], failOnSlice?: number): Slicer {
  const subject: Subject = { backend: 'fake', mode: name, subject: 'raw', open: () => Promise.reject(new Error('unused')) };
  let slices = 0;
  return {
    subject,
    async slice(ms) {
      slices += 1;
      if (slices === failOnSlice) throw new Error(`${name} broke`);
      log.push(`${name}:${ms}`);
    },
    row: (): BenchRow => ({
      backend: 'fake',
      mode: name,
      workload: 'uncontended',
      subject: 'raw',
      opsPerSec: slices,
      ownerChangesPerSec: null,
      p50Ms: 0,
      p99Ms: 0,
      maxMs: 0,
      fairness: null,
      ratioToRaw: null,
    }),
    close: async () => {
      log.push(`${name}:closed`);
    },
  };
}

describe('runInterleaved', () => {
  it('runs one slice of every subject per round, starting one place later each round, then closes all', async () => {
    const log: string[] = [];
    const rows = await runInterleaved(
      ['a', 'b', 'c'].map((name) => ({ label: name, open: async () => fakeSlicer(name, log) })),
      { rounds: 3, sliceMs: 7 },
      (label, error) => expect.fail(`${label}: ${String(error)}`),
    );
    expect(log).toEqual(['a:7', 'b:7', 'c:7', 'b:7', 'c:7', 'a:7', 'c:7', 'a:7', 'b:7', 'a:closed', 'b:closed', 'c:closed']);
    expect(rows.map((row) => [row.mode, row.opsPerSec])).toEqual([
      ['a', 3],
      ['b', 3],
      ['c', 3],
    ]);
  });

  it('leaves out a subject that cannot open or whose slice throws, reports both, and the others run every round', async () => {
    const log: string[] = [];
    const errors: string[] = [];
    const rows = await runInterleaved(
      [
        { label: 'a', open: async () => fakeSlicer('a', log) },
        { label: 'unopenable', open: () => Promise.reject(new Error('no server')) },
        { label: 'b', open: async () => fakeSlicer('b', log, 2) },
      ],
      { rounds: 3, sliceMs: 1 },
      (label, error) => errors.push(`${label}: ${error instanceof Error ? error.message : String(error)}`),
    );
    expect(errors).toEqual(['unopenable: no server', 'b: b broke']);
    expect(rows.map((row) => row.mode)).toEqual(['a']);
    expect(log.filter((entry) => entry === 'a:1')).toHaveLength(3);
    expect(log).toContain('b:closed');
  });
});
