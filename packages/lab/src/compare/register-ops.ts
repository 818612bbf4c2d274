/**
 * The register operations of a run, as Jepsen records a history: who, what, with which value,
 * when it was invoked and when it completed, and whether it took effect (ok), certainly did not
 * (fail) or may have (info: no reply came).
 */
import { now } from './clock.js';
import type { Operation } from './linearizability.js';
import type { RegisterInput } from './register-model.js';

export interface RegisterOp {
  /** The client (c0, c1, ...). */
  readonly process: string;
  readonly f: 'read' | 'write';
  /** A read's result, a write's argument. */
  readonly value: number;
  /** ms, on the clock of the process where the register lives. */
  readonly invoke: number;
  /** ms; absent when no reply came (outcome info). */
  readonly complete?: number;
  readonly outcome: 'ok' | 'fail' | 'info';
}

/**
 * Records the calls on one register where it lives. The times are the register's own (one clock
 * for every client): each interval runs from when the register took the call to when it answered,
 * which lies inside the client's own interval for that call, and contains the moment it took effect.
 */
export class RegisterOpLog {
  readonly ops: RegisterOp[] = [];

  read(process: string, read: () => number): number {
    const invoke = now();
    const value = read();
    this.ops.push({ process, f: 'read', value, invoke, complete: now(), outcome: 'ok' });
    return value;
  }

  /** `write` returns whether the register took the value (a refused write is a fail). */
  write(process: string, value: number, write: () => boolean): boolean {
    const invoke = now();
    const accepted = write();
    this.ops.push({ process, f: 'write', value, invoke, complete: now(), outcome: accepted ? 'ok' : 'fail' });
    return accepted;
  }
}

/**
 * The operations the lock is meant to make atomic: each hold's read and the write after it (the
 * same client's next call) become one compare-and-set from the value read to the value written,
 * from the read's invocation to the write's completion. A read with no write after it (a reader, a
 * holder told it lost the lock) stays a read. Under mutual exclusion these never interleave; a
 * stale holder's write over newer work makes two of them claim the same step.
 *
 * Failed operations are left out (they took no effect; a refused write keeps its read). A write
 * whose reply never came makes its hold an info compare-and-set: it may have happened, or not
 * (then its read is dropped with it, which can only make the check more lenient). A read with no
 * reply tells nothing and is left out; the write after it counts as a plain write.
 */
export function holdOperations(ops: readonly RegisterOp[]): Operation<RegisterInput>[] {
  const out: Operation<RegisterInput>[] = [];
  const asRead = (r: RegisterOp): Operation<RegisterInput> => ({
    process: r.process,
    input: { f: 'read', value: r.value },
    invoke: r.invoke,
    complete: r.complete ?? r.invoke,
    outcome: 'ok',
  });
  // Per client: its last ok read not yet followed by a write.
  const pending = new Map<string, RegisterOp>();
  const flushRead = (process: string): void => {
    const r = pending.get(process);
    if (r === undefined) return;
    out.push(asRead(r));
    pending.delete(process);
  };
  const byInvoke = [...ops].sort((a, b) => a.invoke - b.invoke);
  for (const o of byInvoke) {
    if (o.f === 'read') {
      flushRead(o.process);
      if (o.outcome === 'ok') pending.set(o.process, o);
      continue;
    }
    const read = pending.get(o.process);
    pending.delete(o.process);
    const complete = o.outcome === 'ok' ? (o.complete ?? Infinity) : Infinity;
    if (o.outcome === 'fail') {
      if (read) out.push(asRead(read));
      continue;
    }
    const outcome = o.outcome === 'ok' ? 'ok' : 'info';
    out.push(
      read
        ? { process: o.process, input: { f: 'cas', from: read.value, to: o.value }, invoke: read.invoke, complete, outcome }
        : { process: o.process, input: { f: 'write', value: o.value }, invoke: o.invoke, complete, outcome },
    );
  }
  for (const process of [...pending.keys()]) flushRead(process);
  return out.sort((a, b) => a.invoke - b.invoke);
}
