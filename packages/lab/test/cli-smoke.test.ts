import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm run bench -- --quick` as a CI smoke test: it completes and writes its files in the documented
 * shape (compare's command line has its own, test/compare-smoke.test.ts). Figures are not asserted: speed belongs to the bench
 * report, not to a test on a shared 2-core machine.
 */
const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'deadbolt-cli-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function run(script: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--expose-gc', join(dist, script), ...args],
      { timeout: timeoutMs, killSignal: 'SIGKILL', env: process.env },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
      },
    );
    child.stdin?.end();
  });
}

describe('command-line entry points (built dist)', () => {
  it('bench --help prints the usage and every option, exit 0', async () => {
    const result = await run('bench/cli.js', ['--help'], 20_000);
    expect(result.code, result.stderr).toBe(0);
    for (const option of ['--quick', '--backend', '--out']) expect(result.stdout).toContain(option);
  });

  it('bench --quick on the memory backend writes results.json (issue-shaped rows) and results.md', async () => {
    const dir = join(out, 'bench');
    const result = await run('bench/cli.js', ['--quick', '--backend', 'memory', '--out', dir], 60_000);
    expect(result.code, result.stderr).toBe(0);
    // No credential in any output (issue 13): no URL with a user:password part.
    expect(`${result.stdout}\n${result.stderr}`).not.toMatch(/[a-z]+:\/\/[^\s/@:]*:[^\s/@]+@/i);
    const json = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as {
      machine: unknown;
      method: { interleaved: boolean; rounds: number; sliceMs: number; loadAverageAtStart: number[]; loadAverageAtEnd: number[] };
      rows: Record<string, unknown>[];
    };
    expect(json.machine).toBeTruthy();
    // Rows compared with each other are interleaved, and the load they were taken at is recorded.
    expect(json.method).toMatchObject({ interleaved: true, rounds: 3 });
    expect(json.method.loadAverageAtStart).toHaveLength(3);
    expect(json.method.loadAverageAtEnd).toHaveLength(3);
    expect(json.rows.length).toBeGreaterThan(0);
    for (const row of json.rows) {
      expect(Object.keys(row)).toEqual(
        expect.arrayContaining([
          'backend',
          'mode',
          'workload',
          'subject',
          'opsPerSec',
          'ownerChangesPerSec',
          'p50Ms',
          'p99Ms',
          'maxMs',
          'fairness',
          'ratioToRaw',
        ]),
      );
      expect(row.opsPerSec).toBeGreaterThan(0);
    }
    const markdown = readFileSync(join(dir, 'results.md'), 'utf8');
    expect(markdown).toContain('| backend');
    expect(markdown).toContain('were interleaved');
    expect(markdown).toMatch(/Load average \(1 \/ 5 \/ 15 min\): [\d.]+ \/ [\d.]+ \/ [\d.]+ at the start/);
  }, 70_000);

  it('bench --scaling, trimmed to one point of each curve on the memory backend, writes results.json, results.md and index.html', async () => {
    const dir = join(out, 'scaling');
    const args = ['--scaling', '--quick', '--backend', 'memory', '--points', '2', '--held', '200', '--keys', '2', '--out', dir];
    const result = await run('bench/cli.js', args, 60_000);
    expect(result.code, result.stderr).toBe(0);
    const json = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as {
      method: { loadAverageAtStart: number[] };
      contention: { workers: number }[];
      held: { locks: number; lost: number }[];
      keys: { keys: number }[];
    };
    expect(json.method.loadAverageAtStart).toHaveLength(3);
    expect(json.contention.map((point) => point.workers)).toEqual([2]);
    expect(json.held).toMatchObject([{ locks: 200, lost: 0 }]);
    expect(json.keys.map((point) => point.keys)).toEqual([2]);
    expect(readFileSync(join(dir, 'index.html'), 'utf8')).toContain('<svg role="img"');
    expect(readFileSync(join(dir, 'results.md'), 'utf8')).toContain('## Held locks');
  }, 70_000);

  it('bench --scaling refuses a bad point list before starting anything, exit 1', async () => {
    const result = await run(
      'bench/cli.js',
      ['--scaling', '--backend', 'memory', '--points', '0,10', '--out', join(out, 'refused')],
      20_000,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--points: "0" is not a positive whole number');
  });
});
