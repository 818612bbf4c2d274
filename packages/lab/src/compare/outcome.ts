/**
 * One word per run for the report's matrix. Safety first: any overlap makes a run 'overlapped';
 * a run that kept exclusion but left nobody able to take the lock for a while during the fault is
 * 'unavailable' (the price a CP system pays); otherwise 'exclusive'.
 */
import type { CheckResult } from './checker.js';

export type Outcome = 'exclusive' | 'overlapped' | 'unavailable';

/** A window with no holder at least this long, touching the fault, counts as unavailability. */
export const unavailableThresholdMs = 1000;

export function outcomeOf(r: { readonly check: CheckResult }): Outcome {
  if (r.check.overlaps > 0) return 'overlapped';
  if (r.check.acquisitions === 0 || r.check.faultUnavailableMs >= unavailableThresholdMs) return 'unavailable';
  return 'exclusive';
}

export const outcomeText: Readonly<Record<Outcome, string>> = {
  exclusive: 'exclusive: never two holders, and the lock stayed available',
  overlapped: 'overlapped: two clients held the lock at the same time',
  unavailable: `unavailable: never two holders, but nobody could take the lock for ${unavailableThresholdMs / 1000} s or more during the fault`,
};
