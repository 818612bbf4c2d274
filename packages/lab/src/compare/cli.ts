#!/usr/bin/env node
/**
 * `npm run compare [-- --quick] [-- --scenario NAME] [-- --out DIR]`: the CP vs AP comparison.
 * Exit code is non-zero only for harness errors, never because a backend behaved as its class predicts.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { quickPlan, scenarios, SkipError, type ScenarioResult } from './scenarios.js';
import { stopDataServers } from './data-servers.js';
import { exitOnInterrupt } from './interrupts.js';
import { terminalTable, writeResults } from './summary.js';

const options = {
  quick: { type: 'boolean', default: false },
  scenario: { type: 'string' },
  only: { type: 'string' },
  out: { type: 'string', default: 'compare-results' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

function usage(): string {
  const list = scenarios.map((s) => `  ${s.name.padEnd(22)} ${s.rows.join(', ')}`).join('\n');
  return `Usage: npm run compare [-- OPTIONS]
       (or node packages/lab/dist/compare/cli.js [OPTIONS])

Runs lock clients against real servers while a fault is injected, checks whether two clients ever
held the lock at once, and writes a report (index.html, one timeline page per run, summary.md and
summary.json). Each holder writes a plain register (no check) and a fenced store: a data server of
its own (PostgreSQL through @deadbolt/fence's admitFence, or Redis through fencedSet) that refuses
a stale write itself, where the lock cannot. Exit code 1 means the harness itself failed, never
that a backend behaved as its class predicts.

Options:
  --quick            the same faults (${quickPlan.scenarios.join(', ')}) on one backend of each class
                     (${quickPlan.rows.join(', ')}), shorter runs
  --scenario NAMES   only these scenarios (comma-separated)
  --only ROWS        only these backends or backend/mode rows (comma-separated, e.g. redis,postgres/lease)
  --out DIR          where to write the report (default compare-results)
  -h, --help         this text

Scenarios and the backend/mode rows each one runs:
${list}
`;
}

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ options, strict: true, allowPositionals: false }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${usage()}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(usage());
    return 0;
  }
  exitOnInterrupt();
  const quick = values.quick;
  const known = scenarios.map((s) => s.name);
  const named = values.scenario
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = named?.filter((n) => !known.includes(n)) ?? [];
  if (unknown.length > 0) {
    process.stderr.write(`unknown scenario ${unknown.map((n) => `"${n}"`).join(', ')}; known: ${known.join(', ')}\n`);
    return 2;
  }
  const wantedNames: readonly string[] | undefined = named ?? (quick ? quickPlan.scenarios : undefined);
  const chosen = scenarios.filter((s) => wantedNames?.includes(s.name) ?? true);
  const matcher =
    (filter: readonly string[]) =>
    (row: string): boolean =>
      filter.some((f) => row === f || row.startsWith(`${f}/`));
  const given = values.only
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  // --quick keeps a scenario to the quick rows when it has any (--quick --scenario redis-failover
  // still runs redis-failover's own row).
  const onlyFor = (scenarioRows: readonly string[]): ((row: string) => boolean) | undefined => {
    if (given) return matcher(given);
    if (quick && scenarioRows.some(matcher(quickPlan.rows))) return matcher(quickPlan.rows);
    return undefined;
  };

  const skipped: Record<string, string> = {};
  const results: ScenarioResult[] = [];
  const started = Date.now();
  const tty = process.stderr.isTTY === true;
  const progress = (done: number, label: string): void => {
    const msg = `[${'#'.repeat(done).padEnd(chosen.length, '.')}] ${done}/${chosen.length} ${label} ${Math.round((Date.now() - started) / 1000)}s`;
    process.stderr.write(tty ? `\r\x1b[K${msg}` : `${msg}\n`);
  };
  let harnessError = false;
  try {
    for (const [n, s] of chosen.entries()) {
      progress(n, s.name);
      try {
        const only = onlyFor(s.rows);
        const onSkip = (row: string, reason: string): void => {
          skipped[`${s.name} ${row}`] = reason;
        };
        results.push(...(await s.run({ quick, onSkip, ...(only ? { only } : {}) })));
      } catch (error) {
        if (error instanceof SkipError) skipped[s.name] = error.message;
        else {
          harnessError = true;
          skipped[s.name] = `harness error: ${(error as Error).stack ?? String(error)}`;
        }
      }
    }
  } finally {
    // The fenced registers' data servers, shared by every row (data-servers.ts).
    await stopDataServers();
  }
  progress(chosen.length, 'done');
  if (tty) process.stderr.write('\n');
  process.stdout.write(`${terminalTable(results)}\n`);
  if (results.some((r) => r.check.staleWritesRejectedFenced > 0))
    process.stdout.write('stale writes "fenced": refused by the data store through @deadbolt/fence (StaleFenceError), not by the lock\n');
  for (const [name, reason] of Object.entries(skipped)) process.stdout.write(`not run ${name}: ${reason}\n`);
  const files = await writeResults(resolve(values.out), results, skipped, {
    kind: named || given ? 'selection' : quick ? 'quick' : 'full',
    quick,
    elapsedMs: Date.now() - started,
  });
  process.stdout.write(`wrote ${files.length} files; open ${files[0]}\n`);
  return harnessError ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exitCode = 1;
  },
);
