import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem, platform, release } from 'node:os';
import { join } from 'node:path';
import type { ScenarioResult } from './scenarios.js';
import { timelineHtml } from './timeline.js';

/** The summary.json row, shaped exactly as issue 8 specifies. */
export interface SummaryRow {
  backend: string; mode: string; class: 'CP' | 'AP'; scenario: string; acquisitions: number; violations: number;
  staleWritesAcceptedPlain: number; staleWritesAcceptedFenced: number; lostNotices: number; maxUnavailableMs: number;
}

export function toRow(r: ScenarioResult): SummaryRow {
  const c = r.check;
  return {
    backend: r.backend, mode: r.mode, class: r.class, scenario: r.scenario, acquisitions: c.acquisitions, violations: c.violations,
    staleWritesAcceptedPlain: c.staleWritesAcceptedPlain, staleWritesAcceptedFenced: c.staleWritesAcceptedFenced,
    lostNotices: c.lostNotices, maxUnavailableMs: c.maxUnavailableMs,
  };
}

const columns: (keyof SummaryRow)[] = ['backend', 'mode', 'class', 'scenario', 'acquisitions', 'violations', 'staleWritesAcceptedPlain', 'staleWritesAcceptedFenced', 'lostNotices', 'maxUnavailableMs'];

export function markdownTable(results: readonly ScenarioResult[]): string {
  const head = [...columns, 'matched'];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const r of results) lines.push(`| ${columns.map((c) => String(toRow(r)[c])).join(' | ')} | ${r.matched ? 'yes' : 'NO'} |`);
  return lines.join('\n');
}

export function terminalTable(results: readonly ScenarioResult[]): string {
  const head = ['backend', 'mode', 'class', 'scenario', 'acq', 'viol', 'stalePlain', 'staleFenced', 'lost', 'maxUnavMs', 'matched'];
  const rows = results.map((r) => { const x = toRow(r); return [x.backend, x.mode, x.class, x.scenario, x.acquisitions, x.violations, x.staleWritesAcceptedPlain, x.staleWritesAcceptedFenced, x.lostNotices, x.maxUnavailableMs, r.matched ? 'yes' : 'NO'].map(String); });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [fmt(head), fmt(widths.map((w) => '-'.repeat(w))), ...rows.map(fmt)].join('\n');
}

export async function writeResults(dir: string, results: readonly ScenarioResult[], skipped: Record<string, string>): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const machine = { platform: platform(), release: release(), cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGb: Math.round(totalmem() / 2 ** 30), node: process.version };
  const files: string[] = [];
  const json = join(dir, 'summary.json');
  await writeFile(json, JSON.stringify({ machine, rows: results.map(toRow), skipped }, null, 2));
  const md = join(dir, 'summary.md');
  const skippedMd = Object.entries(skipped).map(([k, v]) => `- ${k}: skipped, ${v}`).join('\n');
  await writeFile(md, `# CP vs AP comparison\n\nMachine: ${machine.cpus} x ${machine.cpuModel}, ${machine.platform} ${machine.release}, node ${machine.node}\n\n${markdownTable(results)}\n\n${results.map((r) => `- ${r.backend}/${r.mode} ${r.scenario}: expected ${r.expectation}: ${r.matched ? 'matched' : 'did NOT match'}`).join('\n')}\n${skippedMd ? `\n${skippedMd}\n` : ''}`);
  files.push(json, md);
  for (const r of results) {
    const html = join(dir, `${r.scenario}-${r.backend}-${r.mode}.html`);
    await writeFile(html, timelineHtml(r));
    files.push(html);
  }
  return files;
}
