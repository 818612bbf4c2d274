import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServerHandle, startRedis } from '@deadbolt/conformance/servers';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from './cli-process.js';

let server: ServerHandle;
let redis: Redis;
let dir: string;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  dir = mkdtempSync(join(tmpdir(), 'deadbolt-cli-wait-'));
});
afterAll(async () => {
  await redis?.quit().catch(() => redis.disconnect());
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const connectedClients = async (): Promise<number> => Number(/connected_clients:(\d+)/.exec(await redis.info('clients'))?.[1]);

/** Resolves once the server counts more than `count` clients: a new deadbolt has connected to ask for the lock. */
async function untilClientsExceed(count: number, deadlineMs = 30_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while ((await connectedClients()) <= count) {
    if (Date.now() > deadline) throw new Error(`no new client within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('deadbolt run interrupted while it waits for the lock (Redis)', () => {
  it('SIGINT ends the wait: exit 130, the command never runs, and the holder keeps the lock', async () => {
    const done = join(dir, 'done');
    const ran = join(dir, 'ran');
    const env = { DEADBOLT_URL: server.url };
    const holder = startCli(['run', 'queue', '--', 'sh', '-c', `echo holding; while [ ! -f "${done}" ]; do sleep 0.05; done`], env);
    await holder.waitForStdout('holding');
    const before = await connectedClients();
    const waiter = startCli(['run', 'queue', '--wait', '60000', '--', 'sh', '-c', `touch "${ran}"`], env);
    // It connects only to ask for the lock, after its signal handlers are in place.
    await untilClientsExceed(before);
    waiter.process.kill('SIGINT');
    const exit = await waiter.exited;
    expect(exit.code, exit.stderr).toBe(130);
    expect(exit.stderr).toContain('interrupted by SIGINT while waiting for the lock "queue"');
    expect(existsSync(ran)).toBe(false);
    expect(await redis.exists('deadbolt:queue')).toBe(1);
    writeFileSync(done, '');
    expect((await holder.exited).code).toBe(0);
    expect(await redis.exists('deadbolt:queue')).toBe(0);
  });
});
