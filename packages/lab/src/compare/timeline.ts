import { findOverlaps } from './checker.js';
import type { ScenarioResult } from './scenarios.js';
import { toRow } from './summary.js';

const esc = (s: string): string => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/**
 * One self-contained HTML page per run: an SVG timeline with a lane per client, holds as bars
 * (blue released, orange lost), overlaps in red, fault windows shaded grey, time in seconds below.
 */
export function timelineHtml(r: ScenarioResult): string {
  const h = r.history;
  const clients = [...new Set(h.intervals.map((i) => i.client))].sort();
  const width = 1100; const left = 60; const lane = 28; const top = 20;
  const span = Math.max(1, h.endedAt - h.startedAt);
  const x = (t: number): number => left + ((t - h.startedAt) / span) * (width - left - 10);
  const height = top + clients.length * lane + 40;
  const parts: string[] = [];
  for (const f of h.faults) parts.push(`<rect x="${x(f.start)}" y="0" width="${Math.max(1, x(f.end) - x(f.start))}" height="${height - 20}" fill="#ccc" opacity="0.6"><title>${esc(f.label)}</title></rect>`);
  clients.forEach((c, n) => parts.push(`<text x="4" y="${top + n * lane + 17}" font-size="12">${esc(c)}</text>`));
  for (const i of h.intervals) {
    const y = top + clients.indexOf(i.client) * lane + 4;
    parts.push(`<rect x="${x(i.start)}" y="${y}" width="${Math.max(1, x(i.end) - x(i.start))}" height="18" fill="${i.outcome === 'lost' ? '#e8a33d' : '#4a7fd4'}"><title>${esc(i.client)} fence ${i.fence ?? '-'} ${Math.round(i.end - i.start)}ms ${i.outcome}</title></rect>`);
  }
  for (const o of findOverlaps(h.intervals)) {
    for (const iv of [o.a, o.b]) {
      const y = top + clients.indexOf(iv.client) * lane + 4;
      parts.push(`<rect x="${x(o.start)}" y="${y}" width="${Math.max(2, x(o.end) - x(o.start))}" height="18" fill="#d62728"><title>overlap ${Math.round(o.end - o.start)}ms</title></rect>`);
    }
  }
  for (let s = 0; s <= span / 1000; s++) parts.push(`<text x="${x(h.startedAt + s * 1000)}" y="${height - 8}" font-size="10">${s}s</text>`);
  const row = toRow(r);
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(r.scenario)} ${esc(r.backend)}/${esc(r.mode)}</title></head>
<body style="font-family:sans-serif"><h1>${esc(r.scenario)}: ${esc(r.backend)} / ${esc(r.mode)} (${r.class})</h1>
<p>Expected: ${esc(r.expectation)}. Result: <b>${r.matched ? 'matched' : 'did not match'}</b>.</p>
<pre>${esc(JSON.stringify(row, null, 1))}</pre>
<p>Lanes are clients; blue bars are holds ended by release, orange bars holds ended by a loss notice, red marks two clients holding at once, grey shading is the fault window.</p>
<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${parts.join('')}</svg></body></html>\n`;
}
