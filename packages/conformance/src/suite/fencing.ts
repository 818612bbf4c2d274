import { LockLostError, UnsupportedOperationError, type Lock, type LockClient, type LockEvents } from '@deadbolt/core';
import { type ConformanceCase, type ResolvedOptions, needsFaults, needsTtl } from './context.js';
import { needsElection } from './election.js';
import { aborted, assert, within } from './util.js';

/**
 * Fencing, safety past the lock's edge: `validate()` asks the server whether this exact grant still
 * holds (a Chubby sequencer check, etcd's IsOwner), and 'expiring' warns while there is still time
 * to stop. A backend without validate fails here with a message that says how to leave the group out.
 */

const CALL_BOUND_MS = 15_000;

function needsExpireHold(options: ResolvedOptions): string | undefined {
  return options.expireHold ? undefined : 'no options.expireHold hook (ends a hold behind the back of its holder)';
}

/** validate(), bounded, with UnsupportedOperationError turned into advice for the adapter's test file. */
async function validated(lock: Pick<Lock, 'validate'>, what: string): Promise<boolean> {
  try {
    return await within(lock.validate(), CALL_BOUND_MS, what);
  } catch (error) {
    if (error instanceof UnsupportedOperationError)
      throw new Error(`${what}: the backend has no validate(); pass skipGroups: { fencing: '...' } to leave this group out`, {
        cause: error,
      });
    throw error;
  }
}

export const fencingValidateHeld: ConformanceCase = {
  title: 'validate() is true while held, and false after release',
  async run(ctx) {
    const client = ctx.client();
    const lock = await client.acquire('k');
    assert(await validated(lock, 'validate while held'), 'validate() was false while the lock was held');
    await lock.release();
    assert(!(await validated(lock, 'validate after release')), 'validate() was true after release');
    const again = await client.acquire('k', { waitMs: 5_000 });
    assert(await validated(again, 'validate of the next hold'), 'validate() was false for the next hold');
    assert(!(await validated(lock, 'validate of the released handle')), 'the released handle validated while a new hold exists');
    await again.release();
  },
};

export const fencingValidateAfterExpiry: ConformanceCase = {
  title: 'after the lease ran out and another owner took the key, the old handle validates false and the new one true',
  requires: needsTtl,
  async run(ctx) {
    const [first, second] = [ctx.client(), ctx.client()];
    const old = await first.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false });
    await aborted(old.signal, ctx.ttlMs + 5_000);
    const next = await second.acquire('k', { waitMs: ctx.ttlMs + ctx.handOffBoundMs + 5_000 });
    assert(!(await validated(old, 'validate of the expired handle')), 'the expired handle validated after another owner took the key');
    assert(await validated(next, 'validate of the new holder'), 'the new holder did not validate');
    await next.release();
  },
};

export const fencingValidateStale: ConformanceCase = {
  title:
    'a hold the server ended early (another owner took the key since) validates false, is declared lost, and the new holder validates true',
  requires: needsExpireHold,
  async run(ctx) {
    const [first, second] = [ctx.client(), ctx.client()];
    const stale = await first.acquire('k', { ttlMs: Math.max(ctx.ttlMs, 60_000), autoRenew: false });
    await ctx.expireHold('k');
    const next = await second.acquire('k', { waitMs: 10_000, ttlMs: Math.max(ctx.ttlMs, 60_000) });
    assert(!(await validated(stale, 'validate of the stale handle')), 'the stale handle validated while another owner held the key');
    assert(!stale.held, 'the stale handle still said held after validate() answered false');
    assert(
      stale.signal.aborted && stale.signal.reason instanceof LockLostError,
      'the signal of the stale handle did not abort with LockLostError',
    );
    assert(await validated(next, 'validate of the new holder'), 'the new holder did not validate');
    await next.release();
    await stale.release().catch(() => undefined);
  },
};

export const fencingValidateMulti: ConformanceCase = {
  title: 'a multi-lock validates while every key holds, and false once the hold of one key is gone',
  requires: needsExpireHold,
  async run(ctx) {
    const client = ctx.client();
    const multi = await client.acquireAll(['a', 'b', 'c'], { ttlMs: Math.max(ctx.ttlMs, 60_000), autoRenew: false });
    assert(await validated(multi, 'validate of the multi-lock'), 'the multi-lock did not validate while held');
    await ctx.expireHold('b');
    assert(!(await validated(multi, 'validate after one key was ended')), 'the multi-lock validated with key b gone');
    await multi.release().catch(() => undefined);
    assert(!(await validated(multi, 'validate after release')), 'the released multi-lock validated');
  },
};

export const fencingValidateTerm: ConformanceCase = {
  title: 'a term validates while leading, and false once the server ended it',
  requires: (options) => needsElection(options) ?? needsExpireHold(options),
  async run(ctx) {
    const election = ctx.client().elect('leader', { id: 'p1', ttlMs: Math.max(ctx.ttlMs, 60_000) });
    const iterator = election[Symbol.asyncIterator]();
    const next = await within(iterator.next(), CALL_BOUND_MS, 'the first term');
    assert(next.done !== true, 'the election ended without a term');
    const term = next.value;
    assert(await validated(term, 'validate of the term'), 'the term did not validate while leading');
    await ctx.expireHold('leader');
    assert(!(await validated(term, 'validate of the ended term')), 'the term validated after the server ended it');
    await election.resign().catch(() => undefined);
  },
};

/** The events of `key` on `client`, in order, each with when it came. */
function recordJeopardy(client: LockClient, key: string): { name: 'expiring' | 'lost'; at: number; remainingMs?: number }[] {
  const seen: { name: 'expiring' | 'lost'; at: number; remainingMs?: number }[] = [];
  client.on('expiring', (event: LockEvents['expiring'][0]) => {
    if (event.key === key) seen.push({ name: 'expiring', at: Date.now(), remainingMs: event.remainingMs });
  });
  client.on('lost', (event: LockEvents['lost'][0]) => {
    if (event.key === key) seen.push({ name: 'lost', at: Date.now() });
  });
  return seen;
}

export const fencingExpiringBeforeLost: ConformanceCase = {
  title: "a paused server: 'expiring' comes before 'lost', with time left, and lock.expiringSignal aborts first",
  requires: (options) =>
    (options.sessionDeadline === true ? undefined : needsTtl(options)?.concat(' and no options.sessionDeadline')) ??
    needsFaults('pause', 'resume')(options),
  async run(ctx) {
    const client = ctx.client();
    const ttlMs = Math.max(ctx.ttlMs, 3_000);
    const seen = recordJeopardy(client, 'k');
    const lock = await client.acquire('k', { ttlMs, autoRenew: true });
    const expiring = lock.expiringSignal;
    let expiringFirst: boolean | undefined;
    expiring.addEventListener('abort', () => (expiringFirst ??= !lock.signal.aborted), { once: true });
    await ctx.fault('pause');
    try {
      await aborted(lock.signal, ttlMs + 10_000);
    } finally {
      await ctx.fault('resume');
    }
    const names = seen.map((event) => event.name).join(', ');
    assert(seen[0]?.name === 'expiring', `'expiring' did not come first (events: ${names || 'none'})`);
    assert((seen[0].remainingMs ?? 0) > 0, `'expiring' came with ${seen[0].remainingMs} ms left`);
    assert(
      seen.some((event) => event.name === 'lost'),
      `no 'lost' after 'expiring' (events: ${names})`,
    );
    assert(seen.filter((event) => event.name === 'expiring').length === 1, `'expiring' came more than once in one episode (${names})`);
    assert(expiringFirst === true, 'lock.expiringSignal did not abort before lock.signal');
    await lock.release().catch(() => undefined);
  },
};

export const fencingCases: readonly ConformanceCase[] = [
  fencingValidateHeld,
  fencingValidateAfterExpiry,
  fencingValidateStale,
  fencingValidateMulti,
  fencingValidateTerm,
  fencingExpiringBeforeLost,
];
