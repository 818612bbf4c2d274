import { startPostgres, startProxy, type PostgresServerHandle, type TcpProxy } from '@deadbolt/conformance/servers';
import { BackendUnavailableError } from '@deadbolt/core';
import type { AcquireRequest } from '@deadbolt/core/adapter';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPostgresBackend } from '../src/index.js';

let server: PostgresServerHandle;
let proxy: TcpProxy;
beforeAll(async () => {
  server = await startPostgres();
  proxy = await startProxy(server.host, server.port);
});
afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

const request = (key: string): AcquireRequest => ({ key, owner: 'o', ttlMs: 5_000, onLost: () => undefined });
/** connectTimeoutMs 300, statementTimeoutMs 2000: a first connect may take 2300 ms, a later one 300. */
const url = (): string => `${proxy.rewrite(server.url)}?mode=lease&connectTimeoutMs=300&statementTimeoutMs=2000`;

/** How long a tryAcquire takes to fail, with the error it fails with. */
async function failure(attempt: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await attempt.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  return { error, ms: performance.now() - started };
}

it("a pool's first connect may take connectTimeoutMs + statementTimeoutMs; once connected, connectTimeoutMs", async () => {
  // A connect that gets no answer (the proxy accepts and forwards nothing).
  proxy.partition();
  const fresh = createPostgresBackend(url());
  try {
    const first = await failure(fresh.tryAcquire(request('first-connect')));
    expect(first.error).toBeInstanceOf(BackendUnavailableError);
    // 2300 ms of connect budget (the call guard's deadline is 2800): not the 300 ms of connectTimeoutMs.
    expect(first.ms).toBeGreaterThanOrEqual(2_000);
  } finally {
    await fresh.close();
  }
  proxy.heal();
  const backend = createPostgresBackend(url());
  try {
    const held = await backend.tryAcquire(request('first-connect'));
    expect(held.acquired).toBe(true);
    if (held.acquired) await backend.release(held.grant);
    // Silent from now on. Of two calls at once, one gets the pooled connection (and the call guard's
    // deadline, 2800 ms); the other needs a new connection, which connectTimeoutMs now bounds.
    proxy.partition();
    const both = await Promise.all(['a', 'b'].map((key) => failure(backend.tryAcquire(request(`first-connect:${key}`)))));
    for (const { error } of both) expect(error).toBeInstanceOf(BackendUnavailableError);
    expect(Math.min(...both.map(({ ms }) => ms))).toBeLessThan(2_000);
  } finally {
    proxy.heal();
    await backend.close();
  }
});
