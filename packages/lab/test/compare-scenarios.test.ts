import { describe, expect, it } from 'vitest';
import { requireAdapter, scenarios, SkipError } from '../src/compare/scenarios.js';

/** Skips (with the reason printed) when an adapter package cannot be imported here. */
async function available(pkg: string): Promise<boolean> {
  try { await requireAdapter(pkg); return true; } catch (error) {
    if (error instanceof SkipError) { console.warn(`skipping: ${error.message}`); return false; }
    throw error;
  }
}
const byName = (name: string) => scenarios.find((s) => s.name === name)!;

describe('compare scenarios (one short run per class)', () => {
  it('client pause on redis setnx: overlaps, stale write accepted by the plain store, none by the fenced one', async (ctx) => {
    if (!(await available('@deadbolt/redis'))) return ctx.skip();
    const [r] = await byName('client-pause').run({ quick: true });
    // The pause lands inside c0's first hold (the others start only then), so this is not luck.
    expect(r!.history.faults).toHaveLength(1);
    expect(r!.check.violations).toBeGreaterThan(0);
    expect(r!.check.staleWritesAcceptedPlain).toBeGreaterThan(0);
    expect(r!.check.staleWritesAcceptedFenced).toBe(0);
  }, 60_000);

  it('zookeeper leader loss: 0 violations', async (ctx) => {
    if (!(await available('@deadbolt/zookeeper'))) return ctx.skip();
    const [r] = await byName('zookeeper-leader-loss').run({ quick: true });
    expect(r!.history.faults).toHaveLength(1);
    expect(r!.check.acquisitions).toBeGreaterThan(0);
    expect(r!.check.violations).toBe(0);
  }, 120_000);
});
