// Test-only broken backends: the suite must catch each one (issue 3, "Done when").
import { createLockClient, LockLostError } from '@deadbolt/core';
import {
  MemoryBackend,
  memoryCapabilities,
  memoryStore,
  type AcquireRequest,
  type AttemptResult,
  type Grant,
} from '@deadbolt/core/adapter';
import { describe, expect, it } from 'vitest';
import { mutualExclusion, nonOwnerRelease, runCase, type ConformanceCase } from '../src/index.js';

/** Deletes whatever holds the key: no owner check. */
class ReleaseWithoutOwnerCheck extends MemoryBackend {
  override async release(grant: Grant): Promise<boolean> {
    this.store.delete(grant.key);
    return true;
  }
}

/** Checks, yields a macrotask, then sets: two contenders can both pass the check. */
class AcquireWithoutAtomicity extends MemoryBackend {
  override async tryAcquire(request: AcquireRequest): Promise<AttemptResult> {
    const holder = this.store.live(request.key, Date.now());
    if (holder) return { acquired: false, retryAfterMs: holder.expiresAt - Date.now() };
    await new Promise((resolve) => setTimeout(resolve, 1));
    const grant: Grant = { key: request.key, owner: request.owner, token: `${Math.random()}`, fence: this.store.nextFence(request.key) };
    this.store.set(request.key, { token: grant.token, owner: grant.owner, fence: grant.fence ?? 0, expiresAt: Date.now() + request.ttlMs });
    return { acquired: true, grant };
  }
}

/** Renew always succeeds, even for a lock that expired and was taken by someone else. */
class RenewAlwaysTrue extends MemoryBackend {
  override async renew(): Promise<boolean> {
    return true;
  }
}

/**
 * Core declares a lease lost at its local deadline without asking the backend, so only a lock the
 * SERVER lost early (restart, eviction) exposes a backend whose renew never fails.
 */
function renewAfterServerLoss(store: ReturnType<typeof memoryStore>): ConformanceCase {
  return {
    title: 'renew after the server lost the lock rejects with LockLostError',
    async run(ctx) {
      const lock = await ctx.client().acquire('k', { ttlMs: 10_000, autoRenew: false });
      store.delete(`${ctx.prefix}k`);
      const error = await lock.renew().then(
        () => undefined,
        (e: unknown) => e,
      );
      if (!(error instanceof LockLostError)) throw new Error(`renew of a lock the server no longer has gave ${String(error)}`);
    },
  };
}

const mutants: [string, new (store: ReturnType<typeof memoryStore>, name: string) => MemoryBackend, ConformanceCase | 'server-loss'][] = [
  ['release without an owner check', ReleaseWithoutOwnerCheck, nonOwnerRelease],
  ['acquire without atomicity', AcquireWithoutAtomicity, mutualExclusion],
  ['renew that always returns true', RenewAlwaysTrue, 'server-loss'],
];

describe('the suite catches broken backends', () => {
  for (const [what, Mutant, given] of mutants) {
    const store = memoryStore(`mutant-${what}`);
    const testCase = given === 'server-loss' ? renewAfterServerLoss(store) : given;
    it(`${what} fails "${testCase.title}"`, async () => {
      const options = {
        name: `mutant: ${what}`,
        capabilities: memoryCapabilities,
        // A new backend per client (close() closes it), all on one shared store.
        create: (_: unknown, { prefix }: { prefix: string }) => createLockClient({ backend: new Mutant(store, 'memory-mutant'), prefix }),
      };
      const error = await runCase(testCase, options).then(
        () => undefined,
        (e: unknown) => e,
      );
      console.info(`[mutant] ${what}: caught by "${testCase.title}": ${String(error)}`);
      expect(error).toBeInstanceOf(Error);
    });
  }
});
