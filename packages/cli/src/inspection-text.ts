import type { LockHolder, LockInspection } from '@deadbolt/core';

/** One hold in words: `mutex fence 12 ttl 29100 ms owner <id>` (fields the backend cannot know are left out). */
export function holderText(hold: LockHolder): string {
  const parts: string[] = [hold.kind];
  if (hold.fence !== undefined) parts.push(`fence ${hold.fence}`);
  if (hold.ttlLeftMs !== undefined) parts.push(`ttl ${hold.ttlLeftMs} ms`);
  if (hold.owner !== undefined) parts.push(`owner ${hold.owner}`);
  return parts.join('  ');
}

/** `<key>  held|free[  N waiting]`, then one indented line per hold. */
export function inspectionLines(seen: LockInspection): string[] {
  const waiting = seen.waiters ? `  ${seen.waiters} waiting` : '';
  return [`${seen.key}  ${seen.held ? 'held' : 'free'}${waiting}`, ...seen.holders.map((hold) => `  ${holderText(hold)}`)];
}

/**
 * What identifies a state of the key for `watch`'s plain lines: the holds without their ttl,
 * which changes at every read.
 */
export function stateOf(seen: LockInspection): string {
  return JSON.stringify([seen.holders.map((hold) => [hold.kind, hold.fence, hold.owner]), seen.waiters ?? 0]);
}
