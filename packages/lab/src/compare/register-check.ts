/**
 * The linearizability verdict of a run's register history, in the words the report uses: true,
 * false (with the operations around where no order worked), or unknown (with why).
 */
import { checkLinearizable, defaultBudget, type Budget, type Operation } from './linearizability.js';
import { describeInput, registerModel, type RegisterInput } from './register-model.js';
import { holdOperations, type RegisterOp } from './register-ops.js';

/** One operation of the window shown when a history is not linearizable. */
export interface WindowOp {
  readonly process: string;
  /** "read 5, write 6", "read 7", "write 3". */
  readonly what: string;
  readonly invoke: number;
  /** Absent for an operation with no reply (it may have taken effect at any time after its invocation). */
  readonly complete?: number;
  readonly outcome: 'ok' | 'info';
  /** The operation the search could not place. */
  readonly blocked: boolean;
}

export interface LinearizabilityResult {
  readonly linearizable: boolean | 'unknown';
  /** One sentence: why false or unknown; what was checked when true. */
  readonly reason: string;
  /** Operations checked (after pairing each hold's read and write). */
  readonly operations: number;
  /** Model steps the search tried: its work. */
  readonly steps: number;
  /** When false: the blocked operation, those overlapping it, and the last two before it (by invocation). */
  readonly window: readonly WindowOp[];
  /** Operations overlapping the blocked one that the window leaves out (it keeps the first and last few). */
  readonly windowOmitted: number;
}

/** At most this many overlapping operations on each side of the blocked one are shown. */
const overlapShown = 3;

export function checkRegisterHistory(ops: readonly RegisterOp[] | undefined, budget: Budget = defaultBudget): LinearizabilityResult {
  if (ops === undefined)
    return {
      linearizable: 'unknown',
      reason: 'no register operations were recorded',
      operations: 0,
      steps: 0,
      window: [],
      windowOmitted: 0,
    };
  const holds = holdOperations(ops);
  const v = checkLinearizable(registerModel(0), holds, budget);
  const base = { operations: holds.length, steps: v.steps, windowOmitted: 0 };
  if (v.linearizable === true)
    return {
      ...base,
      linearizable: true,
      reason: `${holds.length} operations take effect one at a time in an order that respects real time`,
      window: [],
    };
  if (v.linearizable === 'unknown') return { ...base, linearizable: 'unknown', reason: v.reason, window: [] };
  const b = v.failure.blockedOp;
  const reason = `${b.process}'s ${describeInput(b.input)} cannot take effect anywhere between its invocation and its completion: in every order that respects real time the register holds another value (${v.failure.stateKey} where the search got furthest, ${v.failure.placed} of ${holds.length} operations placed)`;
  return { ...base, linearizable: false, reason, ...windowAround(holds, b) };
}

/** The blocked operation, the ones overlapping it (the first and last few), and the two that completed just before it. */
export function windowAround(
  holds: readonly Operation<RegisterInput>[],
  blocked: Operation<RegisterInput>,
): { window: WindowOp[]; windowOmitted: number } {
  const end = (o: Operation<RegisterInput>): number => (o.outcome === 'info' ? Infinity : o.complete);
  const overlapping = holds.filter((o) => o !== blocked && o.invoke <= end(blocked) && end(o) >= blocked.invoke);
  const shown =
    overlapping.length <= overlapShown * 2 ? overlapping : [...overlapping.slice(0, overlapShown), ...overlapping.slice(-overlapShown)];
  const before = holds
    .filter((o) => end(o) < blocked.invoke)
    .sort((a, b) => end(a) - end(b))
    .slice(-2);
  const window = [...before, blocked, ...shown]
    .sort((a, b) => a.invoke - b.invoke)
    .map((o) => ({
      process: o.process,
      what: describeInput(o.input),
      invoke: o.invoke,
      ...(o.outcome === 'ok' ? { complete: o.complete } : {}),
      outcome: o.outcome,
      blocked: o === blocked,
    }));
  return { window, windowOmitted: overlapping.length - shown.length };
}
