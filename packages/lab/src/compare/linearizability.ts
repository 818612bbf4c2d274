/**
 * A linearizability checker: the Wing-Gong search with Lowe's memoisation, as Porcupine does it
 * (https://github.com/anishathalye/porcupine; Lowe, "Testing for linearizability", 2017). It looks
 * for one order of the operations that respects real time (an operation that completed before
 * another was invoked comes first) and that the sequential model accepts step by step. The search
 * walks the invocations and completions in time order, tries each pending operation as the next to
 * take effect, and backtracks when it meets the completion of one it has not placed yet; a
 * (placed-set, model state) pair it has seen before is never explored twice.
 *
 * Operations whose outcome is unknown (`info`: no reply came) may take effect at any time after
 * their invocation, or never: they complete at +Infinity, and the search succeeds once every `ok`
 * operation is placed. Failed operations never took effect; the caller leaves them out.
 *
 * The effort is bounded (steps, memo entries): past the budget the verdict is `unknown`, with why.
 */

export interface Model<S, I> {
  readonly init: S;
  /** The state after `input`, or undefined when the model does not allow it in `state`. */
  step(state: S, input: I): S | undefined;
  /** Equal states give equal keys (the memo's second half). */
  key(state: S): string;
}

export interface Operation<I> {
  readonly process: string;
  readonly input: I;
  readonly invoke: number;
  /** +Infinity (or anything) for an `info` operation: it is treated as never completing. */
  readonly complete: number;
  readonly outcome: 'ok' | 'info';
}

export interface Budget {
  /** Model steps tried (each "could this operation take effect now?"). */
  readonly maxSteps: number;
  /** Distinct (placed-set, state) pairs remembered. */
  readonly maxMemo: number;
}

export const defaultBudget: Budget = { maxSteps: 2_000_000, maxMemo: 200_000 };

/** Where the search got furthest before it had to give up on every order. */
export interface Failure<I> {
  /** Index (into the operations given) of the operation whose completion the search could not pass. */
  readonly blocked: number;
  /** The model's state at that point, as its key. */
  readonly stateKey: string;
  /** How many operations had been placed there. */
  readonly placed: number;
  readonly blockedOp: Operation<I>;
}

export type Verdict<I> =
  | { readonly linearizable: true; readonly steps: number; readonly memo: number }
  | { readonly linearizable: false; readonly steps: number; readonly memo: number; readonly failure: Failure<I> }
  | { readonly linearizable: 'unknown'; readonly steps: number; readonly memo: number; readonly reason: string };

interface Entry {
  readonly op: number;
  readonly call: boolean;
  readonly time: number;
  match: Entry | undefined; // a call's completion entry
  prev: Entry | undefined;
  next: Entry | undefined;
}

/** The time-ordered list of invocations and completions; at equal times invocations first (they overlap). */
function entryList<I>(ops: readonly Operation<I>[]): Entry {
  const events: Entry[] = [];
  ops.forEach((o, op) => {
    const call: Entry = { op, call: true, time: o.invoke, match: undefined, prev: undefined, next: undefined };
    const done = o.outcome === 'info' ? Infinity : o.complete;
    const ret: Entry = { op, call: false, time: done, match: undefined, prev: undefined, next: undefined };
    call.match = ret;
    events.push(call, ret);
  });
  events.sort((a, b) => a.time - b.time || (a.call === b.call ? a.op - b.op : a.call ? -1 : 1));
  const head: Entry = { op: -1, call: false, time: -Infinity, match: undefined, prev: undefined, next: undefined };
  let last = head;
  for (const e of events) {
    last.next = e;
    e.prev = last;
    last = e;
  }
  return head;
}

/** Takes a call and its completion out of the list (the operation has been placed). */
function lift(call: Entry): void {
  call.prev!.next = call.next;
  if (call.next) call.next.prev = call.prev;
  const ret = call.match!;
  ret.prev!.next = ret.next;
  if (ret.next) ret.next.prev = ret.prev;
}

/** Undoes lift, in the reverse order. */
function unlift(call: Entry): void {
  const ret = call.match!;
  ret.prev!.next = ret;
  if (ret.next) ret.next.prev = ret;
  call.prev!.next = call;
  if (call.next) call.next.prev = call;
}

/** The placed set, with an incremental (Zobrist) hash so the memo needs no full copy to find its bucket. */
class PlacedSet {
  readonly words: Uint32Array;
  hash = 0;
  private readonly zobrist: Uint32Array;
  constructor(n: number) {
    this.words = new Uint32Array(Math.ceil(n / 32));
    this.zobrist = new Uint32Array(n);
    // A fixed seed: the same history always takes the same path (reproducible step counts).
    let x = 0x9e3779b9;
    for (let i = 0; i < n; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      this.zobrist[i] = x >>> 0;
    }
  }
  flip(i: number): void {
    this.words[i >>> 5]! ^= 1 << (i & 31);
    this.hash = (this.hash ^ this.zobrist[i]!) >>> 0;
  }
}

function sameWords(a: Uint32Array, b: Uint32Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Checks `ops` against `model`. Pure: the same input gives the same verdict and step count. */
export function checkLinearizable<S, I>(model: Model<S, I>, ops: readonly Operation<I>[], budget: Budget = defaultBudget): Verdict<I> {
  const head = entryList(ops);
  const placed = new PlacedSet(ops.length);
  const memo = new Map<string, Uint32Array[]>();
  let memoSize = 0;
  const stack: { call: Entry; state: S }[] = [];
  let state = model.init;
  let okLeft = ops.filter((o) => o.outcome === 'ok').length;
  let steps = 0;
  let failure: Failure<I> | undefined;
  let entry = head.next;
  while (okLeft > 0) {
    if (entry === undefined) throw new Error('linearizability search ran off its list with operations left (a bug)');
    if (entry.call) {
      if (++steps > budget.maxSteps)
        return {
          linearizable: 'unknown',
          steps: steps - 1,
          memo: memoSize,
          reason: gaveUp(`${budget.maxSteps} steps`, failure, ops.length),
        };
      const next = model.step(state, ops[entry.op]!.input);
      if (next !== undefined) {
        placed.flip(entry.op);
        const bucketKey = `${placed.hash}|${model.key(next)}`;
        const bucket = memo.get(bucketKey);
        if (!bucket?.some((w) => sameWords(w, placed.words))) {
          if (++memoSize > budget.maxMemo)
            return {
              linearizable: 'unknown',
              steps,
              memo: memoSize - 1,
              reason: gaveUp(`${budget.maxMemo} remembered states`, failure, ops.length),
            };
          if (bucket) bucket.push(placed.words.slice());
          else memo.set(bucketKey, [placed.words.slice()]);
          stack.push({ call: entry, state });
          state = next;
          if (ops[entry.op]!.outcome === 'ok') okLeft--;
          lift(entry);
          entry = head.next;
          continue;
        }
        placed.flip(entry.op); // seen before from here: nothing new down this branch
      }
      entry = entry.next;
    } else {
      // A completion of an operation not placed yet: every order down this branch breaks real time.
      if (failure === undefined || stack.length > failure.placed)
        failure = { blocked: entry.op, stateKey: model.key(state), placed: stack.length, blockedOp: ops[entry.op]! };
      const top = stack.pop();
      if (top === undefined) return { linearizable: false, steps, memo: memoSize, failure: failure };
      state = top.state;
      placed.flip(top.call.op);
      if (ops[top.call.op]!.outcome === 'ok') okLeft++;
      unlift(top.call);
      entry = top.call.next;
    }
  }
  return { linearizable: true, steps, memo: memoSize };
}

function gaveUp(what: string, failure: Failure<unknown> | undefined, total: number): string {
  const progress = failure ? `; at most ${failure.placed} of ${total} operations placed in one order` : '';
  return `the search stopped after ${what} without deciding${progress}`;
}
