import type { BenchRow } from './subject.js';
import type { Slicer } from './workloads.js';

/** One subject of an interleaved measurement, not yet opened. */
export interface Contestant {
  readonly label: string;
  open(): Promise<Slicer>;
}

/** How a measurement is cut up: every subject runs `rounds` slices of `sliceMs`. */
export interface SliceSchedule {
  readonly rounds: number;
  readonly sliceMs: number;
}

/**
 * Measures subjects that are compared with each other (Deadbolt beside the raw protocol and the
 * peers) by interleaving them: all are opened first, then each round runs one slice of every
 * subject, one after the other, and the next round starts the order one place later (A B, B A, ...),
 * so that no subject always runs right after the same other one. A load change on the shared
 * machine (other processes come and go over seconds) then falls on every subject alike, where
 * back-to-back rows of a few seconds each saw it on one row and not the other and moved the ratio
 * by up to 2x. A subject that cannot be opened, or whose slice throws, is reported through
 * `onError` and left out; the others go on.
 */
export async function runInterleaved(
  contestants: readonly Contestant[],
  schedule: SliceSchedule,
  onError: (label: string, error: unknown) => void,
): Promise<BenchRow[]> {
  const opened: { label: string; slicer: Slicer; failed: boolean }[] = [];
  try {
    for (const contestant of contestants) {
      try {
        opened.push({ label: contestant.label, slicer: await contestant.open(), failed: false });
      } catch (error) {
        onError(contestant.label, error);
      }
    }
    for (let round = 0; round < schedule.rounds; round += 1) {
      for (let index = 0; index < opened.length; index += 1) {
        const entry = opened[(index + round) % opened.length]!;
        if (entry.failed) continue;
        try {
          await entry.slicer.slice(schedule.sliceMs);
        } catch (error) {
          entry.failed = true;
          onError(entry.label, error);
        }
      }
    }
    return opened.filter((entry) => !entry.failed).map((entry) => entry.slicer.row());
  } finally {
    await Promise.allSettled(opened.map((entry) => entry.slicer.close()));
  }
}
