import type { AcquireOptions, Lock, LockClient } from '@deadbolt/core';
import type { CaseContext, ResolvedOptions } from './context.js';
import { delay, waitUntil } from './util.js';

/** Slack for lease expiry on a shared 2-core machine, plus memcached's whole-second granule. */
export const EXPIRY_SLACK_MS = 1_000;

/** Resolves on the client's next 'contended' event: that acquire has found the key busy and queued. */
export function contention(client: LockClient): Promise<void> {
  return new Promise((resolve) => {
    client.once('contended', () => resolve());
  });
}

/** A pending acquire whose outcome can be looked at without awaiting it. */
export interface Pending {
  readonly promise: Promise<Lock>;
  settled(): boolean;
  lock(): Lock | undefined;
}

export function track(promise: Promise<Lock>): Pending {
  let done = false;
  let got: Lock | undefined;
  promise.then(
    (lock) => {
      done = true;
      got = lock;
    },
    () => {
      done = true;
    },
  );
  promise.catch(() => undefined);
  return { promise, settled: () => done, lock: () => got };
}

/** Starts `acquire` and resolves once it has queued ('contended') or already settled. */
export async function queued(client: LockClient, acquire: () => Promise<Lock>): Promise<Pending> {
  const contended = contention(client);
  const pending = track(acquire());
  await Promise.race([
    contended,
    pending.promise.then(
      () => undefined,
      () => undefined,
    ),
  ]);
  return pending;
}

/**
 * The interval checker with modes: every hold enters and leaves it; an entry that conflicts with
 * the holds inside (a writer beside anyone, a reader beside a writer, more permits than allowed)
 * is a violation, with what was inside at the time.
 */
export class Occupancy {
  private readers = 0;
  private writers = 0;
  private permitHolders = 0;
  readonly violations: string[] = [];
  maxPermitHolders = 0;
  maxReaders = 0;

  constructor(private readonly permits = Number.POSITIVE_INFINITY) {}

  enter(mode: 'read' | 'write' | 'permit'): void {
    if (mode === 'write') {
      if (this.readers + this.writers > 0)
        this.violations.push(`a writer entered beside ${this.readers} reader(s) and ${this.writers} writer(s)`);
      this.writers += 1;
    } else if (mode === 'read') {
      if (this.writers > 0) this.violations.push(`a reader entered beside ${this.writers} writer(s)`);
      this.readers += 1;
      this.maxReaders = Math.max(this.maxReaders, this.readers);
    } else {
      this.permitHolders += 1;
      this.maxPermitHolders = Math.max(this.maxPermitHolders, this.permitHolders);
      if (this.permitHolders > this.permits) this.violations.push(`${this.permitHolders} permit holders at once, permits ${this.permits}`);
    }
  }

  leave(mode: 'read' | 'write' | 'permit'): void {
    if (mode === 'write') this.writers -= 1;
    else if (mode === 'read') this.readers -= 1;
    else this.permitHolders -= 1;
  }
}

/** Which crash a case can stage: a hold nobody renews (ttl backends), or the adapter's kill hook. */
export function needsCrash(options: Pick<ResolvedOptions, 'capabilities' | 'kill'>): string | undefined {
  if (options.kill || options.capabilities.lease === 'ttl') return undefined;
  return `capabilities.lease is '${options.capabilities.lease}' and the adapter gave no kill hook`;
}

/**
 * A hold taken by a client that then dies. On a 'ttl' backend the hold has a short lease that
 * nothing renews or releases (what a dead process leaves); otherwise the adapter's kill hook ends
 * the client's session after the grant. Resolves with the hold and how long the server may take
 * to free it from now.
 */
export async function crashedHold(
  ctx: CaseContext,
  acquire: (client: LockClient, options: AcquireOptions) => Promise<Lock>,
): Promise<{ lock: Lock; freedWithinMs: number }> {
  const client = ctx.client();
  if (ctx.capabilities.lease === 'ttl') {
    const lock = await acquire(client, { waitMs: 10_000, ttlMs: ctx.ttlMs, autoRenew: false });
    return { lock, freedWithinMs: ctx.ttlMs + EXPIRY_SLACK_MS + (ctx.capabilities.minTtlMs >= 1_000 ? ctx.capabilities.minTtlMs : 0) };
  }
  const lock = await acquire(client, { waitMs: 10_000 });
  await ctx.kill(client);
  return { lock, freedWithinMs: ctx.killBoundMs };
}

/**
 * The end state of a chaos case: nothing left on the server (when the adapter can count it), and
 * `free()` (a probe that takes and gives back everything) succeeds. Waits up to `withinMs` for
 * crashed holds to expire and background deletes to finish.
 */
export async function nothingLeft(ctx: CaseContext, free: () => Promise<boolean>, withinMs: number): Promise<string | undefined> {
  const freed = await waitUntil(free, withinMs, 50);
  if (!freed) return `the key was still busy ${withinMs} ms after the last operation: a hold or queue entry was left behind`;
  if (ctx.residue) {
    let left = -1;
    const clean = await waitUntil(async () => (left = await ctx.residue!()) === 0, withinMs, 100);
    if (!clean) return `${left} holder(s), queue entries, nodes or rows left on the server`;
  }
  return undefined;
}

/** A seeded generator (mulberry32): chaos runs are random but repeatable from the printed seed. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export { delay };
