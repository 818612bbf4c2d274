import { describe, expect, it } from 'vitest';
import { checkLinearizable, type Operation } from '../src/compare/linearizability.js';
import { checkRegisterHistory } from '../src/compare/register-check.js';
import { registerModel, type RegisterInput } from '../src/compare/register-model.js';
import { holdOperations, type RegisterOp } from '../src/compare/register-ops.js';

/** Raw register calls, as the harness records them. */
const read = (process: string, value: number, invoke: number, complete?: number, outcome: RegisterOp['outcome'] = 'ok'): RegisterOp => ({
  process,
  f: 'read',
  value,
  invoke,
  ...(complete === undefined ? {} : { complete }),
  outcome: complete === undefined ? 'info' : outcome,
});
const write = (process: string, value: number, invoke: number, complete?: number, outcome: RegisterOp['outcome'] = 'ok'): RegisterOp => ({
  ...read(process, value, invoke, complete, outcome),
  f: 'write',
});
const verdict = (ops: RegisterOp[]): boolean | 'unknown' => checkRegisterHistory(ops).linearizable;

describe('linearizability of register histories', () => {
  it('a stale write after a newer write completed is not linearizable; refused by a fence, it is', () => {
    // c0 reads 0 and stalls; c1 reads 0, writes 1 and is done; c0 then writes 1 over it.
    const stale = [read('c0', 0, 0, 1), read('c1', 0, 2, 3), write('c1', 1, 4, 5), write('c0', 1, 10, 11), read('c2', 1, 12, 13)];
    const r = checkRegisterHistory(stale);
    expect(r.linearizable).toBe(false);
    expect(r.window.map((o) => `${o.process} ${o.what}`)).toEqual(['c0 read 0, write 1', 'c1 read 0, write 1']);
    expect(r.window.filter((o) => o.blocked)).toHaveLength(1);
    expect(r.reason).toMatch(/cannot take effect/);
    // The same history with c0's write refused (a fenced register): nothing stale took effect.
    expect(verdict(stale.map((o) => (o.process === 'c0' && o.f === 'write' ? { ...o, outcome: 'fail' } : o)))).toBe(true);
  });

  it('holds one after another, each reading what the last wrote, are linearizable', () => {
    expect(verdict([read('c0', 0, 0, 1), write('c0', 1, 2, 3), read('c1', 1, 4, 5), write('c1', 2, 6, 7), read('c2', 2, 8, 9)])).toBe(true);
  });

  it('concurrent overlapping writes are fine in either order, and a later read may see either', () => {
    const both = [write('c0', 1, 0, 10), write('c1', 2, 1, 9)];
    expect(verdict([...both, read('c2', 1, 11, 12)])).toBe(true);
    expect(verdict([...both, read('c2', 2, 11, 12)])).toBe(true);
    // But once a read has seen the later of the two, the other cannot come back.
    expect(verdict([...both, read('c2', 1, 11, 12), read('c2', 2, 13, 14), read('c0', 1, 15, 16)])).toBe(false);
  });

  it('a read of a value never written is not linearizable', () => {
    expect(verdict([read('c0', 0, 0, 1)])).toBe(true); // the initial value
    expect(verdict([write('c0', 1, 0, 1), read('c1', 42, 2, 3)])).toBe(false);
    expect(verdict([write('c0', 1, 0, 10), read('c1', 42, 2, 3)])).toBe(false);
  });

  it('a read of an overwritten value after the overwrite completed is not linearizable; during it, it is', () => {
    const r = checkRegisterHistory([write('c0', 1, 0, 1), write('c1', 2, 2, 3), read('c2', 1, 4, 5)]);
    expect(r.linearizable).toBe(false);
    expect(r.window.map((o) => `${o.process} ${o.what}${o.blocked ? ' (blocked)' : ''}`)).toEqual([
      'c0 write 1',
      'c1 write 2',
      'c2 read 1 (blocked)',
    ]);
    expect(verdict([write('c0', 1, 0, 1), write('c1', 2, 2, 5), read('c2', 1, 3, 4)])).toBe(true);
  });

  it('an operation with no reply may or may not have taken effect, once, and never before its invocation', () => {
    const pending = [write('c0', 1, 0, 1), write('c1', 2, 2)];
    expect(verdict([...pending, read('c2', 1, 5, 6)])).toBe(true); // it never took effect
    expect(verdict([...pending, read('c2', 2, 5, 6)])).toBe(true); // it did
    expect(verdict([...pending, read('c2', 1, 5, 6), read('c2', 2, 7, 8)])).toBe(true); // it did, late
    expect(verdict([...pending, read('c2', 2, 5, 6), read('c2', 1, 7, 8)])).toBe(false); // it cannot be undone
    expect(verdict([write('c0', 1, 0, 1), read('c2', 2, 1.5, 1.8), write('c1', 2, 2)])).toBe(false); // not before its invocation
    // A hold whose write got no reply: its read-modify-write happened whole, or not at all.
    expect(verdict([read('c0', 0, 0, 1), write('c0', 1, 2), read('c1', 0, 3, 4), write('c1', 1, 5, 6), read('c2', 1, 7, 8)])).toBe(true);
    // A write that failed never took effect.
    expect(verdict([write('c0', 1, 0, 1), write('c1', 9, 2, 3, 'fail'), read('c2', 9, 4, 5)])).toBe(false);
  });

  it("pairs each hold's read with its write; a read with no write after it stays a read", () => {
    const ops = holdOperations([
      read('c0', 0, 0, 1),
      read('c1', 0, 0.5, 0.6),
      write('c0', 1, 2, 3),
      read('c1', 1, 4, 5),
      read('c0', 1, 6, 7),
    ]);
    expect(ops.map((o) => [o.process, o.input, o.invoke, o.complete])).toEqual([
      ['c0', { f: 'cas', from: 0, to: 1 }, 0, 3],
      ['c1', { f: 'read', value: 0 }, 0.5, 0.6],
      ['c1', { f: 'read', value: 1 }, 4, 5],
      ['c0', { f: 'read', value: 1 }, 6, 7],
    ]);
  });

  it('a stale hold that overlapped many others shows a short window around it', () => {
    // c0 reads 0 at the start and writes 1 at the end; c1 and c2 take 20 holds in between.
    const ops: RegisterOp[] = [read('c0', 0, 0, 0.1)];
    for (let i = 0; i < 20; i++) {
      const who = i % 2 === 0 ? 'c1' : 'c2';
      ops.push(read(who, i, 1 + i * 10, 2 + i * 10), write(who, i + 1, 3 + i * 10, 4 + i * 10));
    }
    ops.push(write('c0', 1, 500, 501));
    const r = checkRegisterHistory(ops);
    expect(r.linearizable).toBe(false);
    expect(r.window.length).toBeLessThanOrEqual(9);
    expect(r.window.length + r.windowOmitted).toBe(21); // c0, and the 20 holds its own one overlapped
    expect(r.window.some((o) => o.process === 'c0' && o.what === 'read 0, write 1')).toBe(true);
    expect(r.window.some((o) => o.what === 'read 0, write 1' && o.process === 'c1')).toBe(true);
  });
});

/**
 * A linearizable history by construction: `processes` clients each call one after another with
 * random lengths; each call takes effect at a random moment inside its interval, on one atomic
 * register, in the order of those moments. Deterministic (seeded), so the work done is too.
 */
function simulated(processes: number, perProcess: number, seed = 7): Operation<RegisterInput>[] {
  let x = seed;
  const rand = (): number => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
  const calls: { process: string; isRead: boolean; invoke: number; complete: number; at: number; value: number }[] = [];
  let nextValue = 1;
  for (let p = 0; p < processes; p++) {
    let t = rand() * 5;
    for (let i = 0; i < perProcess; i++) {
      const invoke = t;
      const complete = invoke + 1 + rand() * 9;
      calls.push({ process: `c${p}`, isRead: rand() < 0.5, invoke, complete, at: invoke + rand() * (complete - invoke), value: 0 });
      t = complete + rand() * 3;
    }
  }
  let register = 0;
  for (const c of [...calls].sort((a, b) => a.at - b.at)) {
    if (c.isRead) c.value = register;
    else register = c.value = nextValue++;
  }
  return calls
    .sort((a, b) => a.invoke - b.invoke)
    .map((c) => ({
      process: c.process,
      input: c.isRead ? { f: 'read', value: c.value } : { f: 'write', value: c.value },
      invoke: c.invoke,
      complete: c.complete,
      outcome: 'ok',
    }));
}

describe('linearizability search effort', () => {
  it('decides 4,000 operations of 5 concurrent clients with work linear in the history', () => {
    const ops = simulated(5, 800);
    const v = checkLinearizable(registerModel(0), ops);
    expect(v.linearizable).toBe(true);
    // Each operation is tried at most a few times (once per client pending beside it, roughly).
    expect(v.steps).toBeLessThan(ops.length * 10);
  });

  it('finds a bad read near the end of 4,000 operations, with bounded work', () => {
    const ops = simulated(5, 800);
    const lastRead = ops.map((o) => o.input.f).lastIndexOf('read');
    const bad = ops.map((o, i) => (i === lastRead ? { ...o, input: { f: 'read' as const, value: -1 } } : o));
    const v = checkLinearizable(registerModel(0), bad);
    expect(v.linearizable).toBe(false);
    expect(v.steps).toBeLessThan(ops.length * 50);
  });

  it('says unknown, and why, when the budget runs out', () => {
    const ops = simulated(5, 800);
    const v = checkLinearizable(registerModel(0), ops, { maxSteps: 500, maxMemo: 1_000_000 });
    expect(v.linearizable).toBe('unknown');
    expect(v.steps).toBe(500);
    if (v.linearizable === 'unknown') expect(v.reason).toMatch(/stopped after 500 steps/);
    const memo = checkLinearizable(registerModel(0), ops, { maxSteps: 1_000_000, maxMemo: 100 });
    expect(memo.linearizable).toBe('unknown');
    if (memo.linearizable === 'unknown') expect(memo.reason).toMatch(/100 remembered states/);
  });
});
