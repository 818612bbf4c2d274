import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { missingPackages } from '@deadbolt/conformance/servers';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * Every scenario once, short, through the built command line on server processes
 * (DEADBOLT_SERVERS=process), whatever provider the rest of the suite uses: the harness must work
 * without a container engine, and exit 0 (any harness error exits 1). Verdicts are asserted only
 * where the run is deterministic by construction (the pause lands inside the first hold; a
 * ZooKeeper quorum never grants twice).
 */
const cli = fileURLToPath(new URL('../dist/compare/cli.js', import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'deadbolt-compare-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));
const missing = missingPackages();
const skipReason = missing.length > 0 ? ` (skipped: Debian packages ${missing.join(', ')} not installed)` : '';

interface Summary {
  rows: {
    backend: string;
    mode: string;
    scenario: string;
    acquisitions: number;
    overlaps: number;
    staleWritesAcceptedPlain: number;
    staleWritesRejectedFenced: number;
    staleWritesAcceptedFenced: number;
    fencedStore: string | null;
    fencedStoreEndsWithNewest: boolean | null;
    linearizable: boolean | 'unknown';
    contradictions: string[];
  }[];
  notRun: Record<string, string>;
}

function compare(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [cli, ...args],
      { timeout: timeoutMs, killSignal: 'SIGKILL', env: { ...process.env, DEADBOLT_SERVERS: 'process' } },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
      },
    );
    child.stdin?.end();
  });
}

/** Scenario -> the rows its smoke run keeps (one per scenario where it has several). */
const plan: [string, string][] = [
  ['client-pause', 'redis/setnx'],
  ['zookeeper-leader-loss', 'zookeeper'],
  ['etcd-leader-loss', 'etcd'],
  ['getset-clock-skew', 'redis/getset,redis/setnx'],
  ['postgres-restart', 'postgres/lease'],
  ['partition', 'redis/setnx'],
  ['redis-failover', 'redis/fair,redis/setnx+replicas'],
  ['redlock-restart', 'redis/redlock'],
  ['election-pause', 'zookeeper/election'],
  ['rwlock-pause', 'zookeeper/read-write'],
  ['semaphore-pause', 'zookeeper/semaphore'],
  ['client-pause-lock-delay', 'redis/setnx'],
  ['client-pause-short-lock-delay', 'redis/setnx'],
];

async function smoke(scenario: string, rows: string): Promise<Summary> {
  const dir = join(out, scenario);
  const result = await compare(['--scenario', scenario, '--only', rows, '--quick', '--out', dir], 90_000);
  expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
  // No credential in any output (issue 13): no URL with a user:password part (the postgres fixture has one).
  expect(`${result.stdout}\n${result.stderr}`).not.toMatch(/[a-z]+:\/\/[^\s/@:]*:[^\s/@]+@/i);
  const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as Summary;
  expect(summary.notRun, 'nothing skipped').toEqual({});
  expect(summary.rows.length).toBe(rows.split(',').length);
  for (const row of summary.rows) {
    expect(row.scenario).toBe(scenario);
    expect(row.acquisitions, `${row.backend}/${row.mode}`).toBeGreaterThan(0);
    // The register history's verdict never contradicts the overlaps and stale writes found.
    expect([true, false, 'unknown']).toContain(row.linearizable);
    expect(row.contradictions, `${row.backend}/${row.mode}`).toEqual([]);
    // The fenced writes went to a real data store (PostgreSQL for postgres, zookeeper and etcd rows,
    // Redis for the others), which ended with the newest holder's write.
    expect(row.fencedStore, `${row.backend}/${row.mode}`).toMatch(
      row.backend === 'redis' ? /^Redis, fencedSet/ : /^PostgreSQL, admitFence/,
    );
    expect(row.fencedStoreEndsWithNewest, `${row.backend}/${row.mode}`).toBe(true);
    expect(existsSync(join(dir, `${scenario}-${row.backend}-${row.mode}.html`))).toBe(true);
  }
  const index = readFileSync(join(dir, 'index.html'), 'utf8');
  expect(index).toContain(`>${scenario}</a>`);
  expect(index).toContain('Who refused the stale writes: the fenced store, not the lock.');
  return summary;
}

describe.skipIf(missing.length > 0)(`compare: every scenario once on server processes${skipReason}`, () => {
  for (const [scenario, rows] of plan) {
    it(`${scenario} (${rows}) completes without a harness error`, async () => {
      const summary = await smoke(scenario, rows);
      const [first] = summary.rows;
      if (scenario === 'client-pause' || scenario === 'election-pause' || scenario === 'rwlock-pause') {
        expect(first!.overlaps).toBeGreaterThan(0);
        expect(first!.staleWritesAcceptedPlain).toBeGreaterThan(0);
        expect(first!.staleWritesAcceptedFenced).toBe(0);
        expect(first!.staleWritesRejectedFenced).toBeGreaterThan(0); // refused by the data store (StaleFenceError)
        expect(first!.linearizable).toBe(false); // the stale write undid newer work: a lost update
      }
      if (scenario === 'zookeeper-leader-loss' || scenario === 'etcd-leader-loss') expect(first!.overlaps).toBe(0);
      // A delay longer than the stall keeps the next holder out until the stalled one released; a shorter one does not.
      if (scenario === 'client-pause-lock-delay') expect(first!.overlaps).toBe(0);
      if (scenario === 'client-pause-short-lock-delay') expect(first!.overlaps).toBeGreaterThan(0);
      // Grants the replica acknowledged survive the failover: no second holder.
      if (scenario === 'redis-failover') expect(summary.rows.find((row) => row.mode === 'setnx+replicas')?.overlaps).toBe(0);
    }, 100_000);
  }

  it('--help prints the usage and every scenario, exit 0; an unknown option exits 2 with the usage', async () => {
    const help = await compare(['--help'], 20_000);
    expect(help.code).toBe(0);
    for (const [scenario] of plan) expect(help.stdout).toContain(scenario);
    expect(help.stdout).toContain('--quick');
    const bad = await compare(['--nope'], 20_000);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Usage:');
  });
});
