import { type ServerHandle, startRedis } from '@deadbolt/conformance/servers';
import { createLockClient, type LockClient } from '@deadbolt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from './cli-process.js';

let server: ServerHandle;
let client: LockClient;

beforeAll(async () => {
  server = await startRedis();
  client = createLockClient(server.url);
});
afterAll(async () => {
  await client?.close();
  await server?.stop();
});

describe('deadbolt inspect, list, release and watch (Redis)', () => {
  it('inspect --json shows the holder of a key a client holds (exit 0), and a free key (exit 1)', async () => {
    const lock = await client.acquire('ops/inspected', { ttlMs: 20_000 });
    try {
      const held = await runCli(['inspect', 'ops/inspected', '--json'], { DEADBOLT_URL: server.url });
      expect(held.code, held.stderr).toBe(0);
      const seen = JSON.parse(held.stdout) as { key: string; held: boolean; holders: { kind: string; fence: number; ttlLeftMs: number }[] };
      expect(seen).toMatchObject({ key: 'ops/inspected', held: true, holders: [{ kind: 'mutex', fence: lock.fence }] });
      expect(seen.holders[0]!.ttlLeftMs).toBeGreaterThan(0);
      expect(seen.holders[0]!.ttlLeftMs).toBeLessThanOrEqual(20_000);
    } finally {
      await lock.release();
    }
    const free = await runCli(['inspect', 'ops/inspected', '--json'], { DEADBOLT_URL: server.url });
    expect(free.code, free.stderr).toBe(1);
    expect(JSON.parse(free.stdout)).toEqual({ key: 'ops/inspected', held: false, holders: [] });
  });

  it('list --prefix finds the held keys under the prefix and no other, --limit bounds it', async () => {
    const locks = await Promise.all(['batch/a', 'batch/b', 'elsewhere/c'].map((key) => client.acquire(key)));
    try {
      const listed = await runCli(['list', '--prefix', 'batch/', '--json'], { DEADBOLT_URL: server.url });
      expect(listed.code, listed.stderr).toBe(0);
      const keys = listed.stdout
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { key: string }).key)
        .sort();
      expect(keys).toEqual(['batch/a', 'batch/b']);
      const limited = await runCli(['list', '--prefix', 'batch/', '--limit', '1', '--json'], { DEADBOLT_URL: server.url });
      expect(limited.stdout.trim().split('\n')).toHaveLength(1);
      const plain = await runCli(['list', '--prefix', 'batch/'], { DEADBOLT_URL: server.url });
      expect(plain.stdout).toMatch(/^batch\/[ab] {2}held\n {2}mutex {2}fence \d+ {2}ttl \d+ ms\n/);
    } finally {
      await Promise.all(locks.map((lock) => lock.release()));
    }
  });

  it('release without --force is refused with exit 64 and touches nothing', async () => {
    const lock = await client.acquire('ops/kept');
    try {
      const refused = await runCli(['release', 'ops/kept'], { DEADBOLT_URL: server.url });
      expect(refused.code).toBe(64);
      expect(refused.stderr).toContain('--force');
      expect(lock.held).toBe(true);
      expect((await client.inspect('ops/kept')).held).toBe(true);
    } finally {
      await lock.release();
    }
  });

  it('release --force stops a deadbolt run holding the key: the run exits 79 (lock lost), saying it was forced', async () => {
    const run = startCli(['run', 'ops/cron', '--ttl', '1500', '--', 'sh', '-c', 'echo ready; while :; do sleep 0.05; done'], {
      DEADBOLT_URL: server.url,
    });
    await run.waitForStdout('ready');
    const released = await runCli(['release', 'ops/cron', '--force', '--json'], { DEADBOLT_URL: server.url });
    expect(released.code, released.stderr).toBe(0);
    expect(JSON.parse(released.stdout)).toEqual({ key: 'ops/cron', released: true });
    const exit = await run.exited;
    expect(exit.code, exit.stderr).toBe(79);
    expect(exit.stderr).toMatch(/lost the lock "ops\/cron" \(.*forced release by .+\)/);
    const again = await runCli(['release', 'ops/cron', '--force'], { DEADBOLT_URL: server.url });
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('ops/cron was not held\n');
  });

  it('last-run --json shows the record of a run-once job (exit 0), and a job that never ran (exit 1)', async () => {
    const result = await client.runOnce('ops/nightly', () => 'done', { lockAtLeastForMs: 0, lockAtMostForMs: 10_000, runner: 'replica-7' });
    expect(result).toEqual({ ran: true, value: 'done' });
    const shown = await runCli(['last-run', 'ops/nightly', '--json'], { DEADBOLT_URL: server.url });
    expect(shown.code, shown.stderr).toBe(0);
    const record = JSON.parse(shown.stdout) as Record<string, unknown>;
    expect(record).toMatchObject({ job: 'ops/nightly', runner: 'replica-7', outcome: 'ok' });
    expect(typeof record.fence).toBe('number');
    expect(Date.parse(String(record.finishedAt))).toBeGreaterThanOrEqual(Date.parse(String(record.startedAt)));
    const plain = await runCli(['last-run', 'ops/nightly'], { DEADBOLT_URL: server.url });
    expect(plain.stdout).toMatch(/^ops\/nightly ok \(runner replica-7, started \S+, finished \S+ fence \d+\)\n$/);
    const never = await runCli(['last-run', 'ops/never', '--json'], { DEADBOLT_URL: server.url });
    expect(never.code, never.stderr).toBe(1);
    expect(JSON.parse(never.stdout)).toEqual({ job: 'ops/never' });
  });

  it('watch on a pipe prints a plain line at each change of the key, until SIGINT (exit 0)', async () => {
    const watcher = startCli(['watch', 'ops/watched', '--interval', '50'], { DEADBOLT_URL: server.url });
    try {
      await watcher.waitForStdout('ops/watched  free');
      const lock = await client.acquire('ops/watched');
      await watcher.waitForStdout(`ops/watched  held  mutex  fence ${lock.fence}`);
      await lock.release();
      await waitForCount(() => watcher.stdout(), 'ops/watched  free', 2);
    } finally {
      watcher.process.kill('SIGINT');
    }
    const exit = await watcher.exited;
    expect(exit.code, exit.stderr).toBe(0);
    const lines = exit.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    for (const line of lines)
      expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z {2}ops\/watched {2}(free|held {2}mutex {2}fence \d+ {2}ttl \d+ ms)$/);
    expect(exit.stdout).not.toContain('\u001b[');
  });
});

/** Waits (on the process's output, bounded) until `text` appears `count` times. */
async function waitForCount(read: () => string, text: string, count: number): Promise<void> {
  const end = Date.now() + 30_000;
  while (read().split(text).length - 1 < count) {
    if (Date.now() > end) throw new Error(`"${text}" not seen ${count} times: ${read()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
