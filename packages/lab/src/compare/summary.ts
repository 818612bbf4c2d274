import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { machineInfo } from './machine.js';
import { outcomeOf, type Outcome } from './outcome.js';
import { indexHtml, type RunKind } from './report.js';
import { scenarios, type ScenarioResult } from './scenarios.js';
import { timelineFile, timelineHtml } from './timeline.js';

/** One summary.json row per backend/mode x scenario. */
export interface SummaryRow {
  backend: string;
  mode: string;
  class: 'CP' | 'AP';
  scenario: string;
  outcome: Outcome;
  matched: boolean;
  acquisitions: number;
  overlaps: number;
  staleWritesAcceptedPlain: number;
  staleWritesRejectedFenced: number;
  staleWritesAcceptedFenced: number;
  /** The data store the fenced writes went to, through @deadbolt/fence (null in hand-made histories). */
  fencedStore: string | null;
  /** Whether that store ended with the newest holder's write (null: not recorded). */
  fencedStoreEndsWithNewest: boolean | null;
  /** What the store held at the end, and whose write that was. */
  fencedStoreFinal: string;
  lostNotices: number;
  maxUnavailableMs: number;
  faultUnavailableMs: number;
  /** The plain register's history, each hold's read-modify-write one step: linearizable, not, or undecided. */
  linearizable: boolean | 'unknown';
  /** Why not, or why undecided (what was checked when linearizable). */
  linearizability: string;
  /** Where the run's own verdicts disagree (then matched is false). */
  contradictions: string[];
}

export function toRow(r: ScenarioResult): SummaryRow {
  const c = r.check;
  return {
    backend: r.backend,
    mode: r.mode,
    class: r.class,
    scenario: r.scenario,
    outcome: outcomeOf(r),
    matched: r.matched,
    acquisitions: c.acquisitions,
    overlaps: c.overlaps,
    staleWritesAcceptedPlain: c.staleWritesAcceptedPlain,
    staleWritesRejectedFenced: c.staleWritesRejectedFenced,
    staleWritesAcceptedFenced: c.staleWritesAcceptedFenced,
    fencedStore: c.fencedStore.store ?? null,
    fencedStoreEndsWithNewest: c.fencedStore.endsWithNewest ?? null,
    fencedStoreFinal: c.fencedStore.finalText,
    lostNotices: c.lostNotices,
    maxUnavailableMs: c.maxUnavailableMs,
    faultUnavailableMs: c.faultUnavailableMs,
    linearizable: c.linearizability.linearizable,
    linearizability: c.linearizability.reason,
    contradictions: [...r.contradictions],
  };
}

/** Column heading and cell, shared by the terminal and the markdown tables. */
const columns: [string, (r: ScenarioResult) => string][] = [
  ['backend', (r) => r.backend],
  ['mode', (r) => r.mode],
  ['class', (r) => r.class],
  ['scenario', (r) => r.scenario],
  ['outcome', (r) => outcomeOf(r)],
  ['acquisitions', (r) => String(r.check.acquisitions)],
  ['overlaps', (r) => String(r.check.overlaps)],
  ['stale writes plain / fenced', (r) => `${r.check.staleWritesAcceptedPlain} / ${r.check.staleWritesAcceptedFenced}`],
  ['loss notices', (r) => String(r.check.lostNotices)],
  ['longest wait ms', (r) => String(r.check.faultUnavailableMs)],
  ['linearizable', (r) => String(r.check.linearizability.linearizable)],
  ['as predicted', (r) => (r.matched ? 'yes' : 'NO')],
];

export function markdownTable(results: readonly ScenarioResult[]): string {
  const lines = [`| ${columns.map(([h]) => h).join(' | ')} |`, `|${columns.map(() => '---').join('|')}|`];
  for (const r of results) lines.push(`| ${columns.map(([, f]) => f(r)).join(' | ')} |`);
  return lines.join('\n');
}

export function terminalTable(results: readonly ScenarioResult[]): string {
  const rows = results.map((r) => columns.map(([, f]) => f(r)));
  const widths = columns.map(([h], i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [fmt(columns.map(([h]) => h)), fmt(widths.map((w) => '-'.repeat(w))), ...rows.map(fmt)].join('\n');
}

/** Writes index.html (first in the returned list), a timeline page per run, summary.md and summary.json. */
export async function writeResults(
  dir: string,
  results: readonly ScenarioResult[],
  notRun: Record<string, string>,
  run: { kind: RunKind; quick: boolean; elapsedMs: number },
): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const machine = await machineInfo();
  const files: string[] = [];
  const index = join(dir, 'index.html');
  await writeFile(
    index,
    indexHtml(results, { machine, scenarios, notRun, kind: run.kind, elapsedMs: run.elapsedMs, finishedAt: new Date() }),
  );
  files.push(index);
  for (const r of results) {
    const html = join(dir, timelineFile(r));
    await writeFile(html, timelineHtml(r, scenarios.find((s) => s.name === r.scenario)?.description));
    files.push(html);
  }
  const json = join(dir, 'summary.json');
  await writeFile(json, `${JSON.stringify({ machine, run: run.kind, quick: run.quick, rows: results.map(toRow), notRun }, null, 2)}\n`);
  const md = join(dir, 'summary.md');
  const fencedNoteMd =
    'Stale writes "fenced" were sent to a data store of its own (not the lock server) through `@deadbolt/fence`; a refused one was refused by that store (StaleFenceError), not by the lock.';
  const notRunMd = Object.entries(notRun)
    .map(([k, v]) => `- ${k}: not run, ${v.split('\n')[0]}`)
    .join('\n');
  await writeFile(
    md,
    `# CP vs AP comparison\n\nMachine: ${machine.cpus} x ${machine.cpuModel}, ${machine.platform} ${machine.release}, node ${machine.node}, servers: ${machine.servers}\n\n${fencedNoteMd}\n\n${markdownTable(results)}\n\n${results.map((r) => `- ${r.backend}/${r.mode} ${r.scenario}: predicted ${r.expectation}: ${r.matched ? 'as predicted' : 'NOT as predicted'}${r.contradictions.map((c) => `; ${c}`).join('')}`).join('\n')}\n${notRunMd ? `\n${notRunMd}\n` : ''}`,
  );
  files.push(json, md);
  return files;
}
