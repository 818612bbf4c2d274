import { ForcedReleaseError } from '../forced-release-error.js';
import type { BackendInspection } from '../contract/requests.js';
import type { LockHolder } from '../api/operations.js';
import type { MemoryStore } from './store.js';

/**
 * The operator API on the memory store. Each function runs in one synchronous step (atomic on the
 * event loop). The store keeps every holder's owner, fence and lease end, and a way to tell its
 * client at once: nothing is absent here but `waiters` of a mutex (core's waiters are not queued).
 */
export function inspectMemory(store: MemoryStore, key: string, now: number): BackendInspection {
  const holders: LockHolder[] = [];
  const mutex = store.live(key, now);
  if (mutex) holders.push({ owner: mutex.owner, fence: mutex.fence, ttlLeftMs: mutex.expiresAt - now, kind: 'mutex' });
  let waiters: number | undefined;
  for (const entry of store.queued.entriesOf(key, now)) {
    for (const holder of entry.holders.values())
      holders.push({ owner: holder.owner, fence: holder.fence, ttlLeftMs: holder.expiresAt - now, kind: holder.mode });
    waiters = (waiters ?? 0) + entry.queue.length;
  }
  return waiters === undefined ? { holders } : { holders, waiters };
}

/** Deletes the mutex and every read, write and permit hold of `key`; each holder's signal aborts now. */
export function forceReleaseMemory(store: MemoryStore, key: string, by: string, now: number, backend: string): boolean {
  const cause = new ForcedReleaseError(by, { key, backend });
  const mutex = store.live(key, now);
  if (mutex) store.delete(key);
  const kinds = store.queued.forceRelease(key, now, cause);
  mutex?.lost?.(cause);
  return mutex !== undefined || kinds > 0;
}

/** Keys with a live hold that start with `prefix`, each once. */
export function listMemoryKeys(store: MemoryStore, prefix: string, now: number): string[] {
  const keys = new Set<string>();
  for (const key of store.keys()) if (key.startsWith(prefix) && store.live(key, now)) keys.add(key);
  for (const key of store.queued.keys(now)) if (key.startsWith(prefix)) keys.add(key);
  return [...keys];
}
