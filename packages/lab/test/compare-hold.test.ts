import { createLockClient } from '@deadbolt/core';
import { describe, expect, it } from 'vitest';
import type { Interval } from '../src/compare/history.js';
import { workUnderHold } from '../src/compare/hold.js';
import type { RegisterPort, WorkerConfig } from '../src/compare/workload.js';

/**
 * One hold of the workload, on the in-memory backend: a holder told it lost the lock while it
 * works does not write afterwards (its interval ends at the notice, so a write after it would land
 * outside every hold the checker sees); a holder told only after its write has written.
 */
const cfg: WorkerConfig = { name: 'c0', url: 'memory://', key: 'k', ttlMs: 1000, holdMs: 50, waitMs: 100, until: Infinity };

function portRecording(onAcquired: () => void): { port: RegisterPort; writes: number[]; intervals: Interval[] } {
  const writes: number[] = [];
  const intervals: Interval[] = [];
  const port: RegisterPort = {
    read: async () => ({ plain: 0, fenced: 0 }),
    write: async (_client, _fence, plain) => {
      writes.push(plain);
    },
    record: (i) => intervals.push(i),
    acquired: onAcquired,
  };
  return { port, writes, intervals };
}

describe('compare workload hold', () => {
  it('a loss notice during the work means no write', async () => {
    const client = createLockClient({ url: 'memory://' });
    const lost = new AbortController();
    // The notice comes after the check the holder makes before its work (acquired is told then).
    const { port, writes, intervals } = portRecording(() => lost.abort());
    try {
      await workUnderHold(client, cfg, port, { signal: lost.signal, fence: 1, writes: true, letGo: async () => {} });
    } finally {
      await client.close();
    }
    expect(writes).toEqual([]);
    expect(intervals.map((i) => i.outcome)).toEqual(['lost']);
  });

  it('a holder frozen past the end of its work hears of the loss only as it wakes, and still writes', async () => {
    const client = createLockClient({ url: 'memory://' });
    const lost = new AbortController();
    const { port, writes } = portRecording(() => {
      // A freeze (as SIGSTOP): nothing runs until well after the work was due to end; the notice comes at the wake.
      const wakeAt = performance.now() + cfg.holdMs * 2;
      while (performance.now() < wakeAt);
      lost.abort();
    });
    try {
      await workUnderHold(client, cfg, port, { signal: lost.signal, fence: 1, writes: true, letGo: async () => {} });
    } finally {
      await client.close();
    }
    expect(writes).toEqual([1]);
  });

  it('a notice after the write does not undo it', async () => {
    const client = createLockClient({ url: 'memory://' });
    const lost = new AbortController();
    const { port, writes } = portRecording(() => {});
    try {
      await workUnderHold(client, cfg, port, {
        signal: lost.signal,
        fence: 1,
        writes: true,
        letGo: async () => lost.abort(),
      });
    } finally {
      await client.close();
    }
    expect(writes).toEqual([1]);
  });
});
