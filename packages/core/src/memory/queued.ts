import { randomUUID } from 'node:crypto';
import type { AcquireRequest, Grant, LockKind } from '../backend.js';
import { InvalidArgumentError } from '../errors.js';

/**
 * Read-write locks and semaphores of the memory backend: per key, the holders (each with its own
 * lease end) and a FIFO queue of waiters. A request is granted at once only if it fits beside the
 * holders AND nobody is queued (no barging); a release or an expiry grants from the head of the
 * queue for as long as the head fits, so consecutive readers are admitted together and a writer is
 * never overtaken by readers that came after it (the "phase-fair" order of Brandenburg & Anderson,
 * which is also what ZooKeeper's sequence order and PostgreSQL's lock queue give).
 */

type Mode = LockKind['type'];

export interface Holder {
  readonly token: string;
  readonly mode: Mode;
  readonly owner: string;
  readonly fence: number;
  /** Tells the holder's client at once that the hold is gone (forceRelease). */
  readonly lost: (cause: Error) => void;
  expiresAt: number;
}

export interface Waiter {
  readonly request: AcquireRequest & { readonly kind: LockKind };
  readonly admit: (grant: Grant) => void;
}

export interface Entry {
  readonly id: string;
  readonly holders: Map<string, Holder>;
  readonly queue: Waiter[];
  /** A semaphore's size, fixed while the entry lives (it goes when the last holder and waiter do). */
  readonly permits: number | undefined;
  expiryTimer: NodeJS.Timeout | undefined;
}

/** A memory grant of a kind: `entry` names the table entry (read-write locks and semaphores never share one). */
export interface QueuedGrant extends Grant {
  readonly entry: string;
}

export class QueuedLocks {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly nextFence: (id: string) => number) {}

  /** One atomic attempt: granted only if it fits and nobody waits ahead (a downgrade never waits). */
  tryAcquire(request: AcquireRequest & { readonly kind: LockKind }, now: number): { grant: Grant } | { retryAfterMs: number } {
    const entry = this.entryFor(request);
    this.expire(entry, now);
    if ((entry.queue.length === 0 || isDowngrade(request.kind)) && this.fits(entry, request.kind))
      return { grant: this.grantTo(entry, request, now) };
    this.dropIfIdle(entry);
    return { retryAfterMs: earliestExpiry(entry) - now };
  }

  /** Queues the request until it is granted, `deadline` passes or `signal` aborts (then it leaves the queue). */
  async acquire(request: AcquireRequest & { readonly kind: LockKind }, deadline: number, signal: AbortSignal): Promise<Grant | undefined> {
    const first = this.tryAcquire(request, Date.now());
    if ('grant' in first) return first.grant;
    if (signal.aborted || Date.now() >= deadline) return undefined;
    const entry = this.entryFor(request);
    request.onContended?.();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    let waiter: Waiter | undefined;
    try {
      return await new Promise<Grant | undefined>((resolve) => {
        waiter = { request, admit: resolve };
        entry.queue.push(waiter);
        this.armExpiry(entry);
        timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()));
        onAbort = () => resolve(undefined);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
      if (waiter) this.leave(entry, waiter);
    }
  }

  /** A waiter that gave up (deadline, abort) leaves the queue; whoever waited behind it may fit now. */
  protected leave(entry: Entry, waiter: Waiter): void {
    const index = entry.queue.indexOf(waiter);
    if (index < 0) return;
    entry.queue.splice(index, 1);
    this.pump(entry, Date.now());
  }

  renew(grant: QueuedGrant, ttlMs: number, now: number): boolean {
    const entry = this.entries.get(grant.entry);
    if (!entry) return false;
    this.expire(entry, now);
    const holder = entry.holders.get(grant.token);
    if (!holder) return false;
    holder.expiresAt = now + ttlMs;
    return true;
  }

  /** Whether this exact hold is still in its entry, its lease running. */
  holds(grant: QueuedGrant, now: number): boolean {
    const holder = this.entries.get(grant.entry)?.holders.get(grant.token);
    return holder !== undefined && holder.expiresAt > now;
  }

  release(grant: QueuedGrant, now: number): boolean {
    const entry = this.entries.get(grant.entry);
    if (!entry) return false;
    this.expire(entry, now);
    const deleted = entry.holders.delete(grant.token);
    this.pump(entry, now);
    return deleted;
  }

  /** Holders plus waiters of entries whose key starts with `keyPrefix`: what a crash or abort left behind. */
  residue(keyPrefix: string, now = Date.now()): number {
    let count = 0;
    for (const entry of [...this.entries.values()]) {
      if (!entry.id.slice(entry.id.indexOf('\u0000') + 1).startsWith(keyPrefix)) continue;
      this.pump(entry, now);
      count += entry.holders.size + entry.queue.length;
    }
    return count;
  }

  /** The live entries of `key` (its read-write lock, its semaphore), expired holds dropped. */
  entriesOf(key: string, now: number): Entry[] {
    const found: Entry[] = [];
    for (const id of [`rw\u0000${key}`, `semaphore\u0000${key}`]) {
      const entry = this.entries.get(id);
      if (!entry) continue;
      this.expire(entry, now);
      found.push(entry);
    }
    return found;
  }

  /** Removes every hold of `key`'s entries in this tick and tells each holder; the queue moves on. */
  forceRelease(key: string, now: number, cause: Error): number {
    let removed = 0;
    for (const entry of this.entriesOf(key, now)) {
      const holders = [...entry.holders.values()];
      entry.holders.clear();
      removed += holders.length;
      for (const holder of holders) holder.lost(cause);
      this.pump(entry, now);
    }
    return removed;
  }

  /** The keys of every entry with a live holder. */
  *keys(now: number): Iterable<string> {
    for (const entry of [...this.entries.values()]) {
      this.expire(entry, now);
      if (entry.holders.size > 0) yield entry.id.slice(entry.id.indexOf('\u0000') + 1);
    }
  }

  protected entryFor(request: AcquireRequest & { readonly kind: LockKind }): Entry {
    const permits = request.kind.type === 'permit' ? request.kind.permits : undefined;
    const id = `${permits === undefined ? 'rw' : 'semaphore'}\u0000${request.key}`;
    const existing = this.entries.get(id);
    if (existing) {
      if (existing.permits !== permits) {
        throw new InvalidArgumentError(
          'permits',
          `the semaphore is in use with ${existing.permits} permits, not ${permits}; every client of one key must pass the same permits`,
          { key: request.key, backend: 'memory' },
        );
      }
      return existing;
    }
    const entry: Entry = { id, holders: new Map(), queue: [], permits, expiryTimer: undefined };
    this.entries.set(id, entry);
    return entry;
  }

  protected grantTo(entry: Entry, request: AcquireRequest & { readonly kind: LockKind }, now: number): QueuedGrant {
    const token = randomUUID();
    // Every grant gets a new fence, readers and permits too (ZooKeeper's czxid behaves the same).
    const grant: QueuedGrant = { key: request.key, owner: request.owner, token, fence: this.nextFence(entry.id), entry: entry.id };
    const lost = (cause: Error): void => request.onLost(grant, cause);
    entry.holders.set(token, {
      token,
      mode: request.kind.type,
      owner: request.owner,
      fence: grant.fence!,
      lost,
      expiresAt: now + request.ttlMs,
    });
    return grant;
  }

  /** Grants from the head of the queue while the head fits. */
  protected pump(entry: Entry, now: number): void {
    this.expire(entry, now);
    for (let head = entry.queue[0]; head && this.fits(entry, head.request.kind); head = entry.queue[0]) {
      entry.queue.shift();
      head.admit(this.grantTo(entry, head.request, now));
    }
    this.armExpiry(entry);
    this.dropIfIdle(entry);
  }

  protected expire(entry: Entry, now: number): void {
    for (const [token, holder] of entry.holders) if (holder.expiresAt <= now) entry.holders.delete(token);
  }

  /** While anyone waits, a holder's lease end is a moment the queue may move: wake then. */
  private armExpiry(entry: Entry): void {
    clearTimeout(entry.expiryTimer);
    entry.expiryTimer = undefined;
    if (entry.queue.length === 0 || entry.holders.size === 0) return;
    entry.expiryTimer = setTimeout(() => this.pump(entry, Date.now()), Math.max(0, earliestExpiry(entry) - Date.now()));
    entry.expiryTimer.unref();
  }

  /** Whether a hold of `kind` can be granted beside the current holders (the queue aside). */
  protected fits(entry: Entry, kind: LockKind): boolean {
    switch (kind.type) {
      case 'write':
        return entry.holders.size === 0;
      case 'permit':
        return entry.holders.size < (entry.permits ?? 0);
      case 'read':
        for (const holder of entry.holders.values()) {
          if (holder.mode === 'write' && holder.token !== kind.downgradeOf?.token) return false;
        }
        return true;
    }
  }

  private dropIfIdle(entry: Entry): void {
    if (entry.holders.size > 0 || entry.queue.length > 0) return;
    clearTimeout(entry.expiryTimer);
    if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id);
  }
}

function isDowngrade(kind: LockKind): boolean {
  return kind.type === 'read' && kind.downgradeOf !== undefined;
}

function earliestExpiry(entry: Entry): number {
  let earliest = Number.POSITIVE_INFINITY;
  for (const holder of entry.holders.values()) earliest = Math.min(earliest, holder.expiresAt);
  return earliest;
}
