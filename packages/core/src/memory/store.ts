import { QueuedLocks } from './queued.js';

/**
 * The state behind `memory://name`: one per name per process, so separate clients (as separate app
 * servers would) contend on the same locks. Expiry is evaluated against Date.now() at each access,
 * which keeps the store timer-free and lets fake timers drive it in tests.
 */
export interface MemoryEntry {
  readonly token: string;
  readonly owner: string;
  readonly fence: number;
  expiresAt: number;
  /** The participant id, when the entry is an election's term. */
  readonly candidate?: string;
  /** Tells the holder's client at once that the hold is gone (forceRelease). */
  readonly lost?: (cause: Error) => void;
}

import { KeyedWaiters } from '../adapter/keyed-waiters.js';

export class MemoryStore {
  /** Read-write locks and semaphores (queued.ts); fences counted apart from the mutex's. */
  queued = new QueuedLocks((id) => this.nextFence(id));
  private readonly entries = new Map<string, MemoryEntry>();
  private readonly fences = new Map<string, number>();
  /** Waiters per key, woken one at a time in arrival order (see KeyedWaiters). */
  readonly waiters = new KeyedWaiters();
  /** Run-once records by key (the runs driver): the run's id and the record's text. */
  readonly runs = new Map<string, { runId: string; record: string }>();
  /** Operations that reached the store: lets tests prove that bad input did no I/O. */
  operations = 0;

  /** The live entry for `key`, dropping it if its lease ran out. */
  live(key: string, now: number): MemoryEntry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt <= now) {
      this.entries.delete(key);
      this.notify(key);
      return undefined;
    }
    return entry;
  }

  set(key: string, entry: MemoryEntry): void {
    this.entries.set(key, entry);
  }

  delete(key: string): void {
    this.entries.delete(key);
    this.notify(key);
  }

  /** The next fencing token for `key`: never reused, even after the lock is deleted. */
  nextFence(key: string): number {
    const next = (this.fences.get(key) ?? 0) + 1;
    this.fences.set(key, next);
    return next;
  }

  /** Every key with an entry (some may have just expired: read each with `live`). */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  get size(): number {
    return this.entries.size;
  }

  get waiterCount(): number {
    return this.waiters.size;
  }

  private notify(key: string): void {
    // One waiter per release (FIFO hand-off): waking all made each release cost an attempt per
    // waiter, and 10,000 waiters on one key timed out. A woken waiter that finds the
    // key taken again waits again; one that gave up has already left the queue.
    this.waiters.wakeOne(key);
  }
}

const stores = new Map<string, MemoryStore>();

export function memoryStore(name: string): MemoryStore {
  let store = stores.get(name);
  if (!store) {
    store = new MemoryStore();
    stores.set(name, store);
  }
  return store;
}
