/**
 * Checks that the harness's own verdicts agree with each other, beside the class's prediction: a
 * run that kept exclusion must leave a linearizable register history (each hold's read-modify-write
 * one step), and a run where the plain register took a stale write must not (two holds then claim
 * the same step); and the fenced store must end with the newest holder's write and refuse only
 * stale ones. A disagreement is a fault of the harness or of the checker, so the row is not
 * called as predicted, and says why.
 */
import type { CheckResult } from './checker.js';
import type { Outcome } from './outcome.js';

export function contradictions(outcome: Outcome, c: CheckResult): string[] {
  const out: string[] = [];
  const verdict = c.linearizability.linearizable;
  if (outcome === 'exclusive' && verdict === false)
    out.push(`the run kept exclusion but its register history is not linearizable (${c.linearizability.reason})`);
  if (c.staleWritesAcceptedPlain > 0 && verdict === true)
    out.push(`the plain register took ${c.staleWritesAcceptedPlain} stale write(s), yet its history was found linearizable`);
  if (c.fencedStore.endsWithNewest === false) out.push(`the fenced store ended with ${c.fencedStore.finalText}`);
  if (c.fencedStore.freshWritesRefused > 0)
    out.push(`the fenced store refused ${c.fencedStore.freshWritesRefused} write(s) that no newer fence had preceded`);
  return out;
}
