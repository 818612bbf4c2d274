import { describe, expect, it } from 'vitest';
import { fifoFairnessFloor } from '../src/bench/fifo-floor.js';

describe('the fairness floor of a perfect FIFO lock', () => {
  it('is 1 when every slice gives every worker the same number of turns', () => {
    expect(fifoFairnessFloor([100, 100, 100], 50)).toBe(1);
  });

  it('is well above 1 when each worker gets one or two turns a slice (75 acquisitions among 50 workers)', () => {
    const floor = fifoFairnessFloor(Array(10).fill(75), 50)!;
    expect(floor).toBeGreaterThan(1.4);
    expect(floor).toBeLessThan(1.8);
  });

  it('falls towards 1 as the turns per slice grow', () => {
    const few = fifoFairnessFloor(Array(10).fill(75), 50)!;
    const many = fifoFairnessFloor(Array(10).fill(1_025), 50)!;
    expect(many).toBeLessThan(few);
    expect(many).toBeLessThan(1.1);
  });

  it('is null (infinite) when even a perfect lock leaves a worker unserved, and for no data', () => {
    expect(fifoFairnessFloor([10], 50)).toBeNull();
    expect(fifoFairnessFloor([], 50)).toBeNull();
  });

  it('is the same for the same counts (seeded)', () => {
    expect(fifoFairnessFloor([75, 80, 90], 50)).toBe(fifoFairnessFloor([75, 80, 90], 50));
  });
});
