import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('npm start (the oversell demo)', () => {
  it('oversells without a lock and sells exactly the stock with one', async () => {
    const { code, stdout } = await run(['--json', '--stock', '20', '--orders', '60', '--concurrency', '20']);
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as { withoutLock: { oversold: number }; withLock: { sold: number; oversold: number } };
    expect(result.withLock.sold).toBe(20);
    expect(result.withLock.oversold).toBe(0);
    expect(result.withoutLock.oversold).toBeGreaterThan(0);
  });

  it('prints its usage with --help', async () => {
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: npm start');
  });
});
