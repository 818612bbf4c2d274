import { UnsupportedOperationError, type Lock } from '@deadbolt/core';
import type { ConformanceCase, ResolvedOptions } from './context.js';
import { aborted, assert, rejection, waitUntil } from './util.js';

/**
 * Lock-delay (`lockDelayMs`, capabilities.lockDelay): a hold that ends without a release keeps its
 * key from others for the delay after its lease, on the server's clock; a release frees it at once;
 * a backend that cannot enforce it refuses before any I/O.
 */

/** Slack for the "free again" side only (timers, polling, a shared machine), plus memcached's whole-second clock. */
const TOLERANCE_MS = 1_000;
const granule = (minTtlMs: number): number => (minTtlMs >= 1_000 ? minTtlMs : 0);
/** The delay the cases ask for: longer than the rounding of a whole-second expiry (memcached adds up to 2 s). */
const delayOf = (ctx: { capabilities: { minTtlMs: number } }): number => Math.max(1_000, 2 * ctx.capabilities.minTtlMs);

function needsLockDelay(options: ResolvedOptions): string | undefined {
  return options.capabilities.lockDelay === true ? undefined : 'capabilities.lockDelay is not true';
}

export const lockDelayAfterCrash: ConformanceCase = {
  title: 'lock-delay: a crashed holder keeps its key from others until ttl + lockDelayMs after its grant or last renewal, then frees it',
  requires: (options) => needsLockDelay(options) ?? (options.capabilities.lease === 'ttl' ? undefined : "capabilities.lease is not 'ttl'"),
  async run(ctx) {
    const [holder, other] = [ctx.client(), ctx.client()];
    const lockDelayMs = delayOf(ctx);
    const options = { ttlMs: ctx.ttlMs, autoRenew: false, lockDelayMs };
    // Two keys: one as granted, one renewed once. The server started each lease no earlier than
    // its request was sent: each key is busy until that send time + ttl + delay.
    const grantSentAt = Date.now();
    await holder.acquire('granted', options);
    const renewed = await holder.acquire('renewed', options);
    const renewSentAt = Date.now();
    await renewed.renew();
    // A crash where the adapter can stage one; else a holder that stops renewing and never releases.
    if (ctx.canKill) await ctx.kill(holder);
    const keys = [
      { key: 'granted', busyUntil: grantSentAt + ctx.ttlMs + lockDelayMs, taken: null as Lock | null },
      { key: 'renewed', busyUntil: renewSentAt + ctx.ttlMs + lockDelayMs, taken: null as Lock | null },
    ];
    // Probe each key until its earliest legal end. A grant counts against the backend only when its
    // answer came back before that end: the server decided no later than the answer arrived.
    const probes = new Map(keys.map((entry) => [entry.key, 0]));
    for (;;) {
      const open = keys.filter((entry) => entry.taken === null && Date.now() < entry.busyUntil);
      if (open.length === 0) break;
      for (const entry of open) {
        probes.set(entry.key, (probes.get(entry.key) ?? 0) + 1);
        entry.taken = await other.tryAcquire(entry.key);
        const early = entry.busyUntil - Date.now();
        assert(
          entry.taken === null || early <= 0,
          `another client got the ${entry.key} key ${early} ms before ttl + lockDelayMs ran out (${ctx.ttlMs} + ${lockDelayMs} ms)`,
        );
      }
    }
    for (const [key, count] of probes) assert(count > 0, `no probe of the ${key} key ran inside the delay: the case proved nothing`);
    for (const entry of keys) {
      const boundMs = entry.busyUntil + TOLERANCE_MS + granule(ctx.capabilities.minTtlMs) - Date.now();
      const freed =
        entry.taken !== null ||
        (await waitUntil(async () => {
          entry.taken = await other.tryAcquire(entry.key);
          return entry.taken !== null;
        }, boundMs));
      assert(freed, `the ${entry.key} key was still busy ${TOLERANCE_MS + granule(ctx.capabilities.minTtlMs)} ms after ttl + lockDelayMs`);
      await entry.taken?.release();
    }
  },
};

export const lockDelayAfterHandOff: ConformanceCase = {
  title: 'lock-delay: a waiter that got the lock on a release and then crashed keeps it from others for ttl + lockDelayMs',
  requires: (options) => needsLockDelay(options) ?? (options.capabilities.lease === 'ttl' ? undefined : "capabilities.lease is not 'ttl'"),
  async run(ctx) {
    const [first, waiter, other] = [ctx.client(), ctx.client(), ctx.client()];
    // Longer than a queued waiter's lease: a grant made in place and claimed only until the
    // waiter's deadline (not ttl + delay) shows as a key freed early.
    const lockDelayMs = delayOf(ctx) + (ctx.fair?.waiterLeaseMs ?? 0);
    const held = await first.acquire('k');
    const contended = new Promise<void>((resolve) => waiter.once('contended', () => resolve()));
    const waiting = waiter.acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false, lockDelayMs, waitMs: 30_000 });
    await contended;
    // The waiter's lease started on the server no earlier than this release was sent.
    const releaseSentAt = Date.now();
    await held.release();
    await waiting;
    if (ctx.canKill) await ctx.kill(waiter);
    const busyUntil = releaseSentAt + ctx.ttlMs + lockDelayMs;
    let taken: Lock | null = null;
    while (taken === null && Date.now() < busyUntil) {
      taken = await other.tryAcquire('k');
      const early = busyUntil - Date.now();
      assert(
        taken === null || early <= 0,
        `another client got the key ${early} ms before ttl + lockDelayMs (${ctx.ttlMs} + ${lockDelayMs} ms) ran out`,
      );
    }
    const boundMs = busyUntil + TOLERANCE_MS + granule(ctx.capabilities.minTtlMs) - Date.now();
    const freed =
      taken !== null ||
      (await waitUntil(async () => {
        taken = await other.tryAcquire('k');
        return taken !== null;
      }, boundMs));
    assert(freed, `still busy ${TOLERANCE_MS + granule(ctx.capabilities.minTtlMs)} ms after ttl + lockDelayMs`);
    await (taken as Lock | null)?.release();
  },
};

export const lockDelayHolderLeaseUnchanged: ConformanceCase = {
  title: "lock-delay: the holder's own lease stays ttl (it learns of its loss at ttl, not ttl + lockDelayMs)",
  requires: (options) => needsLockDelay(options) ?? (options.capabilities.lease === 'ttl' ? undefined : "capabilities.lease is not 'ttl'"),
  async run(ctx) {
    const lock = await ctx.client().acquire('k', { ttlMs: ctx.ttlMs, autoRenew: false, lockDelayMs: 60_000 });
    const start = Date.now();
    await aborted(lock.signal, ctx.ttlMs + TOLERANCE_MS);
    assert(Date.now() - start <= ctx.ttlMs + TOLERANCE_MS, 'the holder trusted its lease past ttl');
  },
};

export const lockDelayNotAfterRelease: ConformanceCase = {
  title: 'lock-delay: a clean release frees the key at once (no delay)',
  requires: needsLockDelay,
  async run(ctx) {
    const [holder, other] = [ctx.client(), ctx.client()];
    const lock = await holder.acquire('k', { ttlMs: ctx.ttlMs * 10, lockDelayMs: 60_000 });
    await lock.renew();
    await lock.release();
    const next = await other.tryAcquire('k');
    assert(next !== null, 'the key stayed busy after a clean release');
    await next.release();
    // The same through withLock.
    await holder.withLock('w', () => undefined, { lockDelayMs: 60_000 });
    const after = await other.tryAcquire('w');
    assert(after !== null, 'the key stayed busy after withLock returned');
    await after.release();
  },
};

export const lockDelayRefused: ConformanceCase = {
  title: 'lock-delay: a backend that cannot enforce it refuses lockDelayMs > 0 before any I/O',
  requires: (options) =>
    options.capabilities.lockDelay === true
      ? 'capabilities.lockDelay is true (the backend enforces it)'
      : options.commandCount
        ? undefined
        : 'no commandCount option (cannot prove no I/O)',
  async run(ctx) {
    const locks = ctx.client();
    // The backend loaded and reachable first, so that the count below sees only the refused call.
    await (await locks.acquire('warm')).release();
    // What asking costs by itself (INFO is a command too): two counts back to back.
    const probeCost = -((await ctx.commandCount()) - (await ctx.commandCount()));
    const before = await ctx.commandCount();
    const error = await rejection(locks.acquire('k', { lockDelayMs: 1_000 }));
    assert(error instanceof UnsupportedOperationError, `got ${String(error)}, not UnsupportedOperationError`);
    assert(/lockDelay/.test(error.message), `the error does not name lock-delay: ${error.message}`);
    const sent = (await ctx.commandCount()) - before - probeCost;
    assert(sent === 0, `the refused acquire sent ${sent} command(s)`);
    const plain = await locks.tryAcquire('k', { lockDelayMs: 0 });
    assert(plain !== null, 'lockDelayMs: 0 was refused too');
    await plain.release();
  },
};

export const lockDelayCases: readonly ConformanceCase[] = [
  lockDelayAfterCrash,
  lockDelayAfterHandOff,
  lockDelayHolderLeaseUnchanged,
  lockDelayNotAfterRelease,
  lockDelayRefused,
];
