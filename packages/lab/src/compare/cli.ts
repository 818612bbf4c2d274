#!/usr/bin/env node
/**
 * `npm run compare [-- --quick] [-- --scenario NAME] [-- --out DIR]`: the CP vs AP comparison.
 * Exit code is non-zero only for harness errors, never because a backend behaved as its class predicts.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { plannedScenarios, scenarios, SkipError, type ScenarioResult } from './scenarios.js';
import { terminalTable, writeResults } from './summary.js';

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, scenario: { type: 'string' }, out: { type: 'string', default: 'compare-results' } } });
  const quick = values.quick ?? false;
  const known = [...scenarios.map((s) => s.name), ...Object.keys(plannedScenarios)];
  if (values.scenario !== undefined && !known.includes(values.scenario)) {
    process.stderr.write(`unknown scenario "${values.scenario}"; known: ${known.join(', ')}\n`);
    return 2;
  }
  const chosen = scenarios.filter((s) => (values.scenario ? s.name === values.scenario : !quick || s.quick));
  const skipped: Record<string, string> = {};
  for (const [name, reason] of Object.entries(plannedScenarios)) if (!values.scenario || values.scenario === name) skipped[name] = reason;
  const results: ScenarioResult[] = [];
  const started = Date.now();
  const tty = process.stderr.isTTY === true;
  const progress = (done: number, label: string): void => {
    const msg = `[${'#'.repeat(done).padEnd(chosen.length, '.')}] ${done}/${chosen.length} ${label} ${Math.round((Date.now() - started) / 1000)}s`;
    process.stderr.write(tty ? `\r\x1b[K${msg}` : `${msg}\n`);
  };
  let harnessError = false;
  for (const [n, s] of chosen.entries()) {
    progress(n, s.name);
    try {
      results.push(...(await s.run({ quick })));
    } catch (error) {
      if (error instanceof SkipError) skipped[s.name] = error.message;
      else { harnessError = true; skipped[s.name] = `harness error: ${(error as Error).stack ?? String(error)}`; }
    }
  }
  progress(chosen.length, 'done');
  if (tty) process.stderr.write('\n');
  process.stdout.write(`${terminalTable(results)}\n`);
  for (const [name, reason] of Object.entries(skipped)) process.stdout.write(`skipped ${name}: ${reason}\n`);
  const files = await writeResults(resolve(values.out ?? 'compare-results'), results, skipped);
  process.stdout.write(`wrote ${files.join(', ')}\n`);
  return harnessError ? 1 : 0;
}

main().then((code) => { process.exitCode = code; }, (error: unknown) => { process.stderr.write(`${String(error)}\n`); process.exitCode = 1; });
