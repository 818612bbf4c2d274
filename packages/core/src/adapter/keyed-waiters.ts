/** One waiter in a key's queue: a node of a doubly linked list, so leaving from the middle is O(1). */
interface WaiterNode {
  readonly wake: () => void;
  prev: WaiterNode | undefined;
  next: WaiterNode | undefined;
  queue: KeyQueue | undefined;
}

interface KeyQueue {
  readonly key: string;
  head: WaiterNode | undefined;
  tail: WaiterNode | undefined;
  size: number;
}

export interface KeyedWaitersHooks {
  /** The first waiter on a key arrived (subscribe to its channel). */
  readonly onFirst?: (key: string) => void;
  /** The last waiter on a key left (unsubscribe). */
  readonly onEmpty?: (key: string) => void;
}

/**
 * The adapter kit's waiter set: the local waiters of each key, in arrival order. A release wakes
 * ONE waiter (FIFO local hand-off, as java.util.concurrent's AbstractQueuedSynchronizer signals only
 * the head): waking all of them makes every release cost one attempt per waiter, which is what made
 * 10,000 waiters on one key collapse. A woken waiter that finds the key taken again waits
 * again; one that gave up is already out of the queue, so the wake goes to the next live one. Every
 * wait is bounded by its own timer, so a lost wake costs at most that bound.
 * Used by the memory store, the Redis release notifier and the PostgreSQL release listener.
 */
export class KeyedWaiters {
  private readonly queues = new Map<string, KeyQueue>();
  private total = 0;

  constructor(private readonly hooks: KeyedWaitersHooks = {}) {}

  /**
   * Resolves when woken or after `maxWaitMs`; rejects with the signal's reason on abort. `ready`,
   * when given, runs once the waiter is queued (e.g. to ask the server whether the key is still
   * held): it resolves the wait early by returning true. Leaves no timer or listener behind.
   */
  wait(key: string, maxWaitMs: number, signal?: AbortSignal, ready?: () => Promise<boolean> | boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      let done = false;
      const finish = (error?: unknown): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.unlink(node);
        if (error === undefined) resolve();
        else reject(error);
      };
      const node: WaiterNode = { wake: () => finish(), prev: undefined, next: undefined, queue: undefined };
      const onAbort = (): void => finish(signal?.reason);
      const timer = setTimeout(() => finish(), Math.max(0, maxWaitMs));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.link(key, node);
      if (ready !== undefined) {
        void Promise.resolve()
          .then(ready)
          .then(
            (free) => {
              if (free) finish();
            },
            () => undefined, // unknown: the timer bounds the wait
          );
      }
    });
  }

  /** Wakes the longest-waiting waiter of `key`. Returns whether there was one. */
  wakeOne(key: string): boolean {
    const head = this.queues.get(key)?.head;
    if (head === undefined) return false;
    head.wake();
    return true;
  }

  /** Wakes every waiter of `key` (the lock's state is unknown, e.g. after a reconnect). */
  wakeAll(key: string): void {
    const queue = this.queues.get(key);
    while (queue?.head !== undefined) queue.head.wake();
  }

  /** Wakes every waiter of every key (a broken connection, close()). */
  wakeEverything(): void {
    for (const key of [...this.queues.keys()]) this.wakeAll(key);
  }

  count(key: string): number {
    return this.queues.get(key)?.size ?? 0;
  }

  /** Waiters across all keys. */
  get size(): number {
    return this.total;
  }

  keys(): IterableIterator<string> {
    return this.queues.keys();
  }

  private link(key: string, node: WaiterNode): void {
    let queue = this.queues.get(key);
    const first = queue === undefined;
    if (queue === undefined) {
      queue = { key, head: undefined, tail: undefined, size: 0 };
      this.queues.set(key, queue);
    }
    node.queue = queue;
    node.prev = queue.tail;
    if (queue.tail) queue.tail.next = node;
    else queue.head = node;
    queue.tail = node;
    queue.size += 1;
    this.total += 1;
    if (first) this.hooks.onFirst?.(key);
  }

  private unlink(node: WaiterNode): void {
    const queue = node.queue;
    if (queue === undefined) return;
    node.queue = undefined;
    if (node.prev) node.prev.next = node.next;
    else queue.head = node.next;
    if (node.next) node.next.prev = node.prev;
    else queue.tail = node.prev;
    node.prev = node.next = undefined;
    queue.size -= 1;
    this.total -= 1;
    if (queue.size === 0 && this.queues.get(queue.key) === queue) {
      this.queues.delete(queue.key);
      this.hooks.onEmpty?.(queue.key);
    }
  }
}
