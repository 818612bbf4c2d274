import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The default owner of a lock is the current async flow: Node's stand-in for Java's thread, which is
 * what Redisson's `clientId:threadId` owner means. `withLock` (and `runAsOwner`) open a flow; code
 * awaited inside it, however deep, is the same owner and may re-enter. Two flows started side by side
 * are two owners, so they exclude each other even inside one process.
 */
const flowStorage = new AsyncLocalStorage<string>();

/** The flow id of the caller, or undefined outside any owner flow. */
export function currentFlow(): string | undefined {
  return flowStorage.getStore();
}

let flows = 0;

/**
 * A fresh flow id: one per top-level acquire outside any flow. Unique within the process, which is
 * all it needs: an owner is `<client id>:<flow>` and the client id is a random UUID. A counter keeps
 * every held lock's owner string (and the lease id built from it) short: heap per held lock.
 */
export function newFlow(): string {
  flows += 1;
  return flows.toString(36);
}

/** Runs `fn` as the given flow; nested acquires inside it re-enter locks that flow holds. */
export function runInFlow<T>(flow: string, fn: () => T): T {
  return flowStorage.run(flow, fn);
}

/**
 * Runs `fn` as a new owner flow: every acquire inside it (without an explicit owner) is the same
 * owner and re-enters. `withLock` does this for you; use it when you call `acquire` directly.
 */
export function inOwnerFlow<T>(fn: () => T): T {
  return flowStorage.run(currentFlow() ?? newFlow(), fn);
}
