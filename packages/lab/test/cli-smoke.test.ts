import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm run bench -- --quick` and `npm run compare -- --quick` as CI smoke tests: they complete and
 * write their files in the documented shape. Figures are not asserted: speed belongs to the bench
 * report, not to a test on a shared 2-core machine.
 */
const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'deadbolt-cli-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function run(script: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--expose-gc', join(dist, script), ...args], { timeout: timeoutMs, killSignal: 'SIGKILL', env: process.env }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

describe('command-line entry points (built dist)', () => {
  it('bench --quick on the memory backend writes results.json (issue-shaped rows) and results.md', async () => {
    const dir = join(out, 'bench');
    const result = await run('bench/cli.js', ['--quick', '--backend', 'memory', '--out', dir], 60_000);
    expect(result.code, result.stderr).toBe(0);
    const json = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { machine: unknown; rows: Record<string, unknown>[] };
    expect(json.machine).toBeTruthy();
    expect(json.rows.length).toBeGreaterThan(0);
    for (const row of json.rows) {
      expect(Object.keys(row)).toEqual(expect.arrayContaining(['backend', 'mode', 'workload', 'subject', 'opsPerSec', 'ownerChangesPerSec', 'p50Ms', 'p99Ms', 'maxMs', 'fairness', 'ratioToRaw']));
      expect(row.opsPerSec).toBeGreaterThan(0);
    }
    expect(readFileSync(join(dir, 'results.md'), 'utf8')).toContain('| backend');
  }, 70_000);

  it('compare --scenario client-pause --quick writes the summary and one timeline page per row', async () => {
    const dir = join(out, 'compare');
    const result = await run('compare/cli.js', ['--scenario', 'client-pause', '--quick', '--out', dir], 90_000);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as { rows: { backend: string; scenario: string; class: string; acquisitions: number }[] };
    expect(summary.rows).toEqual([expect.objectContaining({ backend: 'redis', scenario: 'client-pause', class: 'AP' })]);
    expect(summary.rows[0]!.acquisitions).toBeGreaterThan(0);
    expect(existsSync(join(dir, 'client-pause-redis-setnx.html'))).toBe(true);
    expect(readFileSync(join(dir, 'summary.md'), 'utf8')).toContain('| backend');
  }, 100_000);
});
