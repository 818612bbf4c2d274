import type { AcquireRequest, Grant, LockBackend } from './backend.js';
import type { AcquirePlan } from './acquire-plan.js';
import { checkedOnRead } from './clock-signal.js';
import { InvalidArgumentError, LockLostError, UnsupportedOperationError } from './errors.js';
import { validateTogether } from './lock-handle.js';
import type { HoldKeeper, MultiDriver } from './contract/drivers.js';
import { driversOf } from './contract/legacy.js';
import { defaultKeyOrder } from './multi-backend.js';
import { currentFlow, newFlow, runInFlow } from './owner.js';
import type { PrimitiveHost } from './primitive-host.js';
import { traced } from './telemetry.js';
import type { AcquireOptions, Lock } from './types.js';
import type { MultiLock } from './types-multi.js';
import { describeValue, validateAcquireOptions } from './validation.js';
import { waitForTurn } from './wait-for-turn.js';

/**
 * `client.acquireAll(keys)`: several locks as one, all or nothing. Deadlock freedom comes from one
 * global order (Havender's ordered resources): every client takes any set of keys in the same
 * order, so no cycle of waiters can form, whatever order callers list them in. A backend may do
 * better (an atomic step, or native queueing under every key at once), never worse: a failed or
 * aborted acquireAll holds nothing afterwards.
 */
export async function acquireAll(host: PrimitiveHost, keys: readonly string[], options: AcquireOptions | undefined): Promise<MultiLock> {
  validateKeys(keys, host.label());
  validateAcquireOptions(keys[0], options, host.label(), true);
  const label = multiLabel(keys);
  host.assertOpen(label);
  const backend = await host.backend();
  host.assertOpen(label);
  // One flow for the whole set: every key has the same owner, and a re-entry is recognised per key.
  return runInFlow(currentFlow() ?? newFlow(), () => {
    if ((options?.lockDelayMs ?? 0) > 0) {
      // The all-or-nothing scripts set no delayed expiry: refused rather than silently not enforced.
      throw new UnsupportedOperationError('lockDelayMs', 'acquireAll does not enforce lock-delay; acquire the keys without it', {
        key: label,
        backend: backend.name,
      });
    }
    // The client's default lock-delay is the plain lock's: a multi-lock runs without it.
    const plans = keys.map((key) => host.plan(backend, key, { ...options, lockDelayMs: 0 }, true));
    options?.signal?.throwIfAborted();
    const drivers = driversOf(backend);
    const multi = drivers.multi;
    const ordered = inGlobalOrder(backend, multi, plans);
    const attributes = {
      'deadbolt.key': label,
      'deadbolt.backend': backend.name,
      'deadbolt.wait_ms': ordered[0]!.waitMs,
      'deadbolt.keys': ordered.length,
    };
    return traced(
      'acquireAll',
      () => attributes,
      () => {
        // A key this owner already holds is a re-entry, which only the per-key path counts.
        const reenters = ordered.some((plan) => host.holds(plan.fullKey, plan.owner));
        // The multi driver's grants are kept by its keeper, or by the mutex's driver when they are plain mutex holds.
        const keeper = multi?.keeper ?? drivers.mutex;
        if (!reenters && multi?.acquireMany) return queued(host, backend, keeper, multi.acquireMany.bind(multi), ordered);
        if (!reenters && multi?.tryAcquireMany) return atomic(host, backend, keeper, multi.tryAcquireMany.bind(multi), ordered);
        return oneByOne(host, ordered, options);
      },
    );
  });
}

/** How a set of keys is named in errors and spans: all of a few, else the first and the count (7,000 keys joined made a 50 kB message). */
export function multiLabel(keys: readonly string[]): string {
  return keys.length <= 3 ? keys.join(', ') : `${keys[0]}, ... (${keys.length} keys)`;
}

function validateKeys(keys: unknown, backend: string): asserts keys is readonly string[] {
  if (!Array.isArray(keys))
    throw new InvalidArgumentError('keys', `expected an array of key strings, got ${describeValue(keys)}`, { backend });
  if (keys.length === 0) throw new InvalidArgumentError('keys', 'the list is empty; name at least one resource', { backend });
  const seen = new Set<unknown>();
  for (const key of keys) {
    if (typeof key !== 'string' || key.length === 0)
      throw new InvalidArgumentError('keys', `every key must be a non-empty string, got ${describeValue(key)}`, { backend });
    if (seen.has(key)) throw new InvalidArgumentError('keys', `"${key}" is listed twice; list each key once`, { key, backend });
    seen.add(key);
  }
}

function inGlobalOrder(backend: LockBackend, multi: MultiDriver | undefined, plans: readonly AcquirePlan[]): AcquirePlan[] {
  const byKey = new Map(plans.map((plan) => [plan.fullKey, plan]));
  const fullKeys = plans.map((plan) => plan.fullKey);
  const order = multi?.orderKeys?.(fullKeys) ?? defaultKeyOrder(fullKeys);
  const ordered = order.map((key) => byKey.get(key));
  if (ordered.length !== plans.length || ordered.some((plan) => plan === undefined) || new Set(ordered).size !== plans.length) {
    throw new Error(`backend ${backend.name}: orderKeys returned a different set of keys`);
  }
  return ordered as AcquirePlan[];
}

/** The default: each key with the ordinary lock, in the global order; on any failure, release what was taken. */
async function oneByOne(host: PrimitiveHost, ordered: readonly AcquirePlan[], options: AcquireOptions | undefined): Promise<MultiLock> {
  const deadline = Date.now() + ordered[0]!.waitMs;
  const locks: Lock[] = [];
  try {
    for (const plan of ordered) {
      locks.push(await host.acquire(plan.userKey, { ...options, waitMs: Math.max(0, deadline - Date.now()) }));
    }
  } catch (error) {
    await releaseInReverse(locks).catch(() => undefined);
    throw error;
  }
  return new MultiLockHandle(locks, ordered[0]!.owner, host.label());
}

function requestsFor(host: PrimitiveHost, ordered: readonly AcquirePlan[], onContended?: () => void): AcquireRequest[] {
  return ordered.map((plan) => ({
    key: plan.fullKey,
    owner: plan.owner,
    ttlMs: plan.ttlMs,
    onLost: (grant: Grant, cause: Error) => host.onLost(grant, cause),
    ...(onContended ? { onContended } : {}),
  }));
}

/** One atomic all-or-nothing attempt per round; between rounds, wait for news of the busy key. */
async function atomic(
  host: PrimitiveHost,
  backend: LockBackend,
  keeper: HoldKeeper,
  tryAcquireMany: NonNullable<MultiDriver['tryAcquireMany']>,
  ordered: readonly AcquirePlan[],
): Promise<MultiLock> {
  const first = ordered[0]!;
  const startedAt = Date.now();
  const deadline = startedAt + first.waitMs;
  const signal = anySignal(first.signal, host.closing);
  const requests = requestsFor(host, ordered);
  const label = multiLabel(ordered.map((plan) => plan.userKey));
  for (let attempts = 1; ; attempts += 1) {
    const sentAt = Date.now();
    const result = await host.call(backend, 'acquire', label, () => tryAcquireMany(requests), { undoBy: keeper });
    if (result.acquired) {
      if (signal.aborted) {
        await releaseGrants(host, backend, keeper, result.grants, label);
        signal.throwIfAborted();
      }
      return new MultiLockHandle(
        result.grants.map((grant, index) => host.adopt(backend, ordered[index]!, grant, sentAt, startedAt, keeper)),
        first.owner,
        backend.name,
      );
    }
    const busy = ordered.find((plan) => plan.fullKey === result.busyKey) ?? first;
    if (attempts === 1) host.emit('contended', { key: busy.userKey, owner: first.owner, attempt: attempts });
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0) throw host.timeout(backend, busy, attempts);
    await waitForTurn(backend, busy.fullKey, attempts, remainingMs, result.retryAfterMs, signal);
  }
}

/** Native queueing (ZooKeeper: one multi enqueues us under every key): the backend waits. */
async function queued(
  host: PrimitiveHost,
  backend: LockBackend,
  keeper: HoldKeeper,
  acquireMany: NonNullable<MultiDriver['acquireMany']>,
  ordered: readonly AcquirePlan[],
): Promise<MultiLock> {
  const first = ordered[0]!;
  const startedAt = Date.now();
  const signal = anySignal(first.signal, host.closing);
  let reported = false;
  const requests = requestsFor(host, ordered, () => {
    if (reported) return;
    reported = true;
    host.emit('contended', { key: first.userKey, owner: first.owner, attempt: 1 });
  });
  const label = multiLabel(ordered.map((plan) => plan.userKey));
  const sentAt = Date.now();
  const deadline = startedAt + first.waitMs;
  const grants = await host.call(backend, 'acquire', label, () => acquireMany(requests, deadline, signal), {
    waitUntil: deadline,
    undoBy: keeper,
  });
  if (grants && signal.aborted) await releaseGrants(host, backend, keeper, grants, label);
  signal.throwIfAborted();
  if (!grants) throw host.timeout(backend, first, 1);
  return new MultiLockHandle(
    grants.map((grant, index) => host.adopt(backend, ordered[index]!, grant, sentAt, startedAt, keeper)),
    first.owner,
    backend.name,
  );
}

async function releaseGrants(
  host: PrimitiveHost,
  backend: LockBackend,
  keeper: HoldKeeper,
  grants: readonly Grant[],
  label: string,
): Promise<void> {
  await Promise.allSettled(
    [...grants].reverse().map((grant) => host.call(backend, 'release', label, () => keeper.release(grant), { release: true })),
  );
}

/** Releases are sent in reverse order of acquisition, then awaited together; the first failure is rethrown. */
async function releaseInReverse(locks: readonly Lock[]): Promise<void> {
  const results = await Promise.allSettled([...locks].reverse().map((lock) => lock.release()));
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) throw failed.reason;
}

function anySignal(...signals: (AbortSignal | undefined)[]): AbortSignal {
  const given = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  return given.length === 1 ? given[0]! : AbortSignal.any(given);
}

class MultiLockHandle implements MultiLock {
  readonly keys: readonly string[];
  readonly fences: ReadonlyMap<string, number | undefined>;
  private readonly lossController = new AbortController();
  private releasing: Promise<void> | undefined;

  constructor(
    readonly locks: readonly Lock[],
    readonly owner: string,
    private readonly backendName: string,
  ) {
    this.keys = locks.map((lock) => lock.key);
    this.fences = new Map(locks.map((lock) => [lock.key, lock.fence]));
    for (const lock of locks) {
      if (lock.signal.aborted) this.lossController.abort(lock.signal.reason);
      else lock.signal.addEventListener('abort', () => this.lossController.abort(lock.signal.reason), { once: true });
    }
    // A read of the signal looks at every lock's deadline first: the first one found past it aborts
    // its own signal, whose listener above aborts this one in the same synchronous run.
    checkedOnRead(this.lossController.signal, () => {
      for (const lock of this.locks) if (!lock.held) return;
    });
  }

  get signal(): AbortSignal {
    return this.lossController.signal;
  }

  get held(): boolean {
    return this.releasing === undefined && this.locks.every((lock) => lock.held);
  }

  assertHeld(): void {
    if (this.releasing !== undefined)
      throw new LockLostError('the locks were released', { key: multiLabel(this.keys), backend: this.backendName });
    for (const lock of this.locks) lock.assertHeld();
  }

  async renew(): Promise<void> {
    await Promise.all(this.locks.map((lock) => lock.renew()));
  }

  async validate(): Promise<boolean> {
    if (this.releasing !== undefined) return false;
    return (await validateTogether(this.locks)) && this.releasing === undefined;
  }

  release(): Promise<void> {
    this.releasing ??= releaseInReverse(this.locks);
    return this.releasing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}
