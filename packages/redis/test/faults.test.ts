import { firstTrueWhileCalling } from '@deadbolt/conformance';
import { startProxy, startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { BackendUnavailableError, createLockClient } from '@deadbolt/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { grantOf, Opened, request, timed } from './support.js';

let server: ServerHandle;
const opened = new Opened();
const commandTimeoutMs = 500;
/** Generous: the machine is shared. What matters is "bounded", not "fast". */
const slackMs = 2_500;
/** The client's reconnect backoff plus one connect timeout, with the same slack. */
const recoveryMs = 10_000;

/** Calls `attempt` until it succeeds or `withinMs` passes; only typed unavailability counts as "not yet". */
async function recovers(attempt: () => Promise<unknown>, withinMs: number): Promise<boolean> {
  const end = Date.now() + withinMs;
  for (;;) {
    try {
      await attempt();
      return true;
    } catch (error) {
      if (!(error instanceof BackendUnavailableError)) throw error;
      if (Date.now() >= end) return false;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

beforeAll(async () => {
  server = await startRedis();
});
afterEach(() => opened.closeAll());
afterAll(() => server?.stop());

describe('redis faults', () => {
  it('a server that is down gives BackendUnavailableError within the deadline, naming key and backend', async () => {
    const backend = opened.backend(server.url, { commandTimeoutMs });
    await grantOf(backend, request('down:warm', 10_000)); // connected before the server goes away
    await server.down();
    try {
      for (const key of ['down:a', 'down:b']) {
        const { ms, error } = await timed(backend.tryAcquire(request(key, 10_000)));
        expect(error).toBeInstanceOf(BackendUnavailableError);
        expect((error as BackendUnavailableError).key).toBe(key);
        expect((error as BackendUnavailableError).backend).toBe('redis:setnx');
        expect(ms).toBeLessThan(commandTimeoutMs + slackMs);
      }
    } finally {
      await server.up();
    }
    // And it recovers once the server is back: within the reconnect's bound, not at the first call
    // (a connect the client began while the port was closed can still be timing out: a container
    // CI run saw the first call after up() fail with that attempt's ETIMEDOUT, typed as it should be).
    expect(await recovers(() => grantOf(backend, request('down:after', 10_000)), recoveryMs)).toBe(true);
  });

  it('a client created while the server is down fails fast too (no hang in the offline queue)', async () => {
    await server.down();
    try {
      const client = createLockClient({ url: `${server.url}?commandTimeoutMs=${commandTimeoutMs}` });
      // A down server inside the wait is retried (it may be a transient disconnect, issue 14), so the
      // typed error comes once the wait is over: within waitMs + one command deadline.
      const waitMs = 1_000;
      const { ms, error } = await timed(client.acquire('never', { ttlMs: 5_000, waitMs }));
      await client.close();
      expect(error).toBeInstanceOf(BackendUnavailableError);
      expect(ms).toBeLessThan(waitMs + commandTimeoutMs + slackMs);
    } finally {
      await server.up();
    }
  });

  it('a frozen server (SIGSTOP) gives BackendUnavailableError within the deadline, for acquire, renew and release', async () => {
    const backend = opened.backend(server.url, { commandTimeoutMs });
    const grant = await grantOf(backend, request('paused:held', 30_000));
    await server.pause();
    try {
      const operations: (() => Promise<unknown>)[] = [
        () => backend.tryAcquire(request('paused:key', 10_000)),
        () => backend.renew(grant, 30_000),
        () => backend.renewMany([grant], [30_000]),
        () => backend.release(grant),
      ];
      for (const operation of operations) {
        const { ms, error } = await timed(operation());
        expect(error).toBeInstanceOf(BackendUnavailableError);
        expect(ms).toBeLessThan(commandTimeoutMs + slackMs);
      }
    } finally {
      await server.resume();
    }
  });

  for (const mode of ['setnx', 'fair'] as const) {
    it(`${mode}: a connection gone silent is dropped at the first command timeout, though calls keep coming faster than it`, async () => {
      const link = await startProxy(server.host, server.port);
      try {
        const backend = opened.backend(link.rewrite(server.url), { commandTimeoutMs, mode });
        const grant = await grantOf(backend, request(`silent:${mode}`, 60_000));
        link.strand();
        // A renewal every 100 ms: ioredis times each command out but kept the connection, so every
        // later one went into the same silent socket. Now the first timeout drops it.
        const answeredAfterMs = await firstTrueWhileCalling(() => backend.renew(grant, 60_000), 100, 10 * commandTimeoutMs);
        expect(answeredAfterMs, 'no renewal was answered after the connection went silent').toBeDefined();
        expect(answeredAfterMs!).toBeLessThan(3 * commandTimeoutMs + slackMs);
        // The stranded connection (never closed by the link) and the new one.
        expect(link.connections).toBe(2);
      } finally {
        await opened.closeAll();
        await link.close();
      }
    });
  }

  it('the URL password never appears in an error', async () => {
    await server.down();
    try {
      const client = createLockClient(`redis://user:s3cret-pw@${server.host}:${server.port}?commandTimeoutMs=${commandTimeoutMs}`);
      const { error } = await timed(client.tryAcquire('k'));
      await client.close();
      expect(error).toBeInstanceOf(BackendUnavailableError);
      const text = `${String(error)} ${String((error as Error).cause)} ${JSON.stringify(error)}`;
      expect(text).not.toContain('s3cret-pw');
    } finally {
      await server.up();
    }
  });
});
