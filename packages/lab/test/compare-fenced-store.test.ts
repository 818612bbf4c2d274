import { missingPackages } from '@deadbolt/conformance/servers';
import { afterAll, describe, expect, it } from 'vitest';
import { openFencedStore, stopDataServers } from '../src/compare/data-servers.js';

/**
 * The fenced register on the real data stores the comparison uses, through @deadbolt/fence: the
 * store itself refuses a stale fence (StaleFenceError, counted as refused) and keeps the newest
 * holder's value. Run with DEADBOLT_SERVERS=process (or containers).
 */
const missing = missingPackages();
afterAll(() => stopDataServers());

describe.skipIf(missing.length > 0)(
  `compare fenced store on real servers${missing.length > 0 ? ` (skipped: Debian packages ${missing.join(', ')} not installed)` : ''}`,
  () => {
    for (const kind of ['postgres', 'redis'] as const) {
      it(`${kind}: a stale fence is refused by the store, which ends with the newest holder's value`, async () => {
        const store = await openFencedStore(kind, `test-${Math.random().toString(36).slice(2, 8)}`);
        let report;
        try {
          expect(await store.read()).toBe(0);
          expect(await store.write('c0', 5, 1)).toBe(true);
          expect(await store.write('c1', 7, 2)).toBe(true);
          // c0 wakes from its pause and writes with its old fence.
          expect(await store.write('c0', 5, 3)).toBe(false);
          expect(await store.read()).toBe(2);
          expect(await store.write('c1', 7, 4)).toBe(true); // the same holder again
        } finally {
          report = await store.finish();
        }
        expect(report).toMatchObject({ kind, finalValue: 4, finalFence: 7 });
        expect(store.writes.map((w) => [w.client, w.fence, w.accepted, w.stale])).toEqual([
          ['c0', 5, true, false],
          ['c1', 7, true, false],
          ['c0', 5, false, true],
          ['c1', 7, true, false],
        ]);
      });
    }

    it('two registers of one data server do not share fences', async () => {
      const a = await openFencedStore('redis', 'test-a');
      const b = await openFencedStore('redis', 'test-b');
      try {
        expect(await a.write('c0', 9, 1)).toBe(true);
        expect(await b.write('c0', 1, 1)).toBe(true);
      } finally {
        await Promise.all([a.finish(), b.finish()]);
      }
    });
  },
);
