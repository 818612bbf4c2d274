import { checkedOnRead } from '../engine/clock-signal.js';
import { LockLostError } from '../errors.js';
import type { Lock } from '../api/lock.js';
import type { Term } from '../api/primitives.js';

/**
 * One term as handed to the caller. Its signal also aborts when the term is given up (`ended`: the
 * body finished, resign), and a read of it checks the term lock's deadline first: AbortSignal.any's
 * composite reads its own state, so without that a term saved before a stall said "leading" until a
 * timer ran. The lock's signal aborts the composite in the same synchronous run.
 */
export function termOf(term: number, id: string, lock: Lock, ended: AbortSignal, backend: string, name: string): Term {
  const signal = checkedOnRead(AbortSignal.any([lock.signal, ended]), () => lock.held);
  return {
    term,
    id,
    signal,
    assertHeld: () => {
      if (ended.aborted) throw new LockLostError('the term was given up', { key: name, backend, cause: ended.reason });
      lock.assertHeld();
    },
    validate: async () => !ended.aborted && (await lock.validate()) && !ended.aborted,
  };
}
