import { BackendUnavailableError, DeadboltError, LockTimeoutError } from '@deadbolt/core';
import { type CaseContext, type ConformanceCase, needsFaults } from './context.js';
import { assertClosesClean } from './handles.js';
import { assert, rejection, waitUntil, within } from './util.js';

const DEADLINE_MS = 30_000;

export const serverRestart: ConformanceCase = {
  title: 'server restart while holding: no hang, typed errors, later acquires work, and close() then leaves nothing open',
  requires: needsFaults('restart'),
  run: (ctx) => assertClosesClean('after a restart, both clients closed', () => serverRestartBody(ctx)),
};

async function serverRestartBody(ctx: CaseContext): Promise<void> {
  const holder = ctx.client();
  const lock = await holder.acquire('k', { ttlMs: Math.max(ctx.ttlMs, 2_000), autoRenew: false });
  await ctx.fault('restart');
  // The old lock either survived or renew says it is lost, always with a typed error.
  const renewed = await within(
    lock.renew().then(
      () => undefined,
      (error: unknown) => error,
    ),
    DEADLINE_MS,
    'renew after restart',
  );
  assert(renewed === undefined || renewed instanceof DeadboltError, `renew after restart failed untyped: ${String(renewed)}`);
  await within(
    lock.release().catch(() => undefined),
    DEADLINE_MS,
    'release after restart',
  );
  const later = ctx.client();
  const ok = await waitUntil(
    async () => {
      const got = await later.acquire('k2', { waitMs: 1_000 }).catch(() => null);
      if (got) await got.release();
      return got !== null;
    },
    DEADLINE_MS,
    200,
  );
  assert(ok, `no acquire worked within ${DEADLINE_MS} ms after restart`);
  await holder.close();
  await later.close();
}

export const serverPaused: ConformanceCase = {
  title: 'paused server: acquire rejects typed within waitMs + 5 s, and close() then leaves nothing open',
  requires: needsFaults('pause', 'resume'),
  run: (ctx) => assertClosesClean('after a pause, the client closed', () => serverPausedBody(ctx)),
};

async function serverPausedBody(ctx: CaseContext): Promise<void> {
  const client = ctx.client();
  const warm = await client.acquire('warm');
  await warm.release();
  await ctx.fault('pause');
  try {
    const waitMs = 2_000;
    const error = await within(rejection(client.acquire('k', { waitMs })), waitMs + 5_000, 'acquire on a paused server');
    assert(
      error instanceof BackendUnavailableError || error instanceof LockTimeoutError,
      `expected BackendUnavailableError or LockTimeoutError, got ${String(error)}`,
    );
  } finally {
    await ctx.fault('resume');
  }
  await client.close();
}

export const serverDown: ConformanceCase = {
  title: 'server down at acquire: BackendUnavailableError within a deadline, and close() then leaves nothing open',
  requires: needsFaults('down', 'up'),
  run: (ctx) =>
    assertClosesClean('after a down server, the client closed', async () => {
      await ctx.fault('down');
      try {
        const client = ctx.client();
        const error = await within(rejection(client.acquire('k', { waitMs: 2_000 })), DEADLINE_MS, 'acquire on a down server');
        assert(error instanceof BackendUnavailableError, `expected BackendUnavailableError, got ${String(error)}`);
        // Closed while the server is still down: its reconnect attempts must end with it.
        await client.close();
      } finally {
        await ctx.fault('up');
      }
    }),
};

export const faultCases: readonly ConformanceCase[] = [serverRestart, serverPaused, serverDown];
