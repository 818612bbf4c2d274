import { BackendUnavailableError, DeadboltError, LockTimeoutError } from '@deadbolt/core';
import { type CaseContext, type ConformanceCase, needsFaults } from './context.js';
import { assertClosesClean } from './handles.js';
import { assert, rejection, within } from './util.js';

/** An attempt given up on a frozen server may leave its lease for at most this long after the server wakes. */
const ORPHAN_BOUND_MS = 3_000;
/** One call's deadline on a frozen server, at most (the fixtures' clients use their 2 s defaults), plus slack. */
const CALL_BOUND_MS = 5_000;

export const frozenServerAcquire: ConformanceCase = {
  title: `frozen server during acquire: typed error within waitMs + one call, no lease left ${ORPHAN_BOUND_MS} ms after it wakes, the next wait succeeds, close() leaves no timer`,
  requires: needsFaults('pause', 'resume'),
  async run(ctx) {
    // Every socket and timer the two clients opened, not only the process's handle count (the fault
    // hooks run untracked: a container's pause is an HTTP call to the engine).
    await assertClosesClean('after a frozen server, both clients closed', async () => {
      const client = ctx.client();
      const warm = await client.acquire('warm');
      await warm.release();
      const waitMs = 300;
      await ctx.fault('pause');
      try {
        const start = Date.now();
        const error = await within(
          rejection(client.acquire('k', { waitMs, ttlMs: 30_000 })),
          waitMs + CALL_BOUND_MS,
          'acquire on a frozen server',
        );
        assert(
          error instanceof BackendUnavailableError || error instanceof LockTimeoutError,
          `expected a typed error, got ${String(error)}`,
        );
        console.info(
          `[deadbolt conformance] ${ctx.name}: acquire on a frozen server settled after ${Date.now() - start} ms (waitMs ${waitMs})`,
        );
      } finally {
        await ctx.fault('resume');
      }
      // The attempt the client gave up on may run now that the server is back: it must not keep the key
      // for its 30 s lease.
      const other = ctx.client();
      const taken = await other.acquire('k', { waitMs: ORPHAN_BOUND_MS, ttlMs: 5_000 }).catch((error: unknown) => error as Error);
      assert(
        !(taken instanceof Error),
        `the key stayed busy ${ORPHAN_BOUND_MS} ms after the server woke (an orphaned lease): ${String(taken)}`,
      );
      await taken.release();
      // The same client, right after the freeze: its wait covers any reconnect.
      const again = await within(client.acquire('k2', { waitMs: 10_000 }), 15_000, 'the first acquire after the freeze');
      await again.release();
      await client.close();
      await other.close();
    });
  },
};

export const killedConnection: ConformanceCase = {
  title:
    'a connection killed by the server mid-hold: renew either keeps the lock (and excludes others) or fails typed; the client recovers, and close() then leaves nothing open',
  requires: needsFaults('killConnections'),
  run: (ctx) => assertClosesClean('after a killed connection, both clients closed', () => killedConnectionBody(ctx)),
};

async function killedConnectionBody(ctx: CaseContext): Promise<void> {
  const [holder, other] = [ctx.client(), ctx.client()];
  const lock = await holder.acquire('k', { ttlMs: Math.max(ctx.ttlMs, 5_000), autoRenew: false });
  await ctx.fault('killConnections');
  const renewed = await within(
    lock.renew().then(
      () => true,
      (error: unknown) => error,
    ),
    CALL_BOUND_MS * 2,
    'renew after the kill',
  );
  if (renewed === true) {
    assert(lock.held, 'renew succeeded but lock.held is false');
    assert((await other.tryAcquire('k')) === null, 'renew succeeded after the kill, yet another client took the key');
  } else {
    assert(renewed instanceof DeadboltError, `renew after the kill failed untyped: ${String(renewed)}`);
  }
  await within(
    lock.release().catch(() => undefined),
    CALL_BOUND_MS * 2,
    'release after the kill',
  );
  const next = await within(holder.acquire('k2', { waitMs: 10_000 }), 15_000, 'acquire after the kill');
  await next.release();
  await holder.close();
  await other.close();
}

export const serverFaultCases: readonly ConformanceCase[] = [frozenServerAcquire, killedConnection];
