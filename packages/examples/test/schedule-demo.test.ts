import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startRedis, type ServerHandle } from '@deadbolt/conformance/servers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { timeout: 40_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

let server: ServerHandle;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(() => server?.stop());

describe('npm start -- --example schedule (three replicas, one cron schedule)', () => {
  it('runs ticks on every replica without a lock, and each tick once with @deadbolt/schedule', { timeout: 45_000 }, async () => {
    const { code, stdout } = await run(['--example', 'schedule', '--backend', server.url, '--ticks', '3', '--json']);
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as {
      withoutLock: { duplicates: number };
      withLock: { duplicates: number; missing: number; ticks: unknown[] };
    };
    expect(result.withLock).toMatchObject({ duplicates: 0, missing: 0 });
    expect(result.withLock.ticks).toHaveLength(3);
    expect(result.withoutLock.duplicates).toBeGreaterThan(0);
  });

  it('refuses memory://, whose locks do not cross processes', async () => {
    const { code, stderr } = await run(['--example', 'schedule', '--backend', 'memory://']);
    expect(code).toBe(2);
    expect(stderr).toContain('needs a real backend');
  });
});
