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
}

export class MemoryStore {
  private readonly entries = new Map<string, MemoryEntry>();
  private readonly fences = new Map<string, number>();
  private readonly waiters = new Map<string, Set<() => void>>();
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

  addWaiter(key: string, wake: () => void): () => void {
    let set = this.waiters.get(key);
    if (!set) {
      set = new Set();
      this.waiters.set(key, set);
    }
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.waiters.get(key) === set) this.waiters.delete(key);
    };
  }

  get size(): number {
    return this.entries.size;
  }

  get waiterCount(): number {
    let count = 0;
    for (const set of this.waiters.values()) count += set.size;
    return count;
  }

  private notify(key: string): void {
    const set = this.waiters.get(key);
    if (!set) return;
    // Every waiter is woken and races: waking only one could strand the rest if that one gave up
    // (aborted) at the same moment. In one process the extra attempts cost microseconds.
    for (const wake of [...set]) wake();
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
