/**
 * One self-contained HTML page per run: what happened told in sentences, then an SVG timeline
 * (a lane per client, the two registers' writes, the fault window labelled), a legend, and the
 * figures as a table.
 */
import { fencedNoteForTimeline } from './fenced-html.js';
import { fencedStoreNames } from './fenced-store.js';
import { linearizabilitySection } from './linearizability-html.js';
import type { Interval, WriteRecord } from './history.js';
import { colours, esc, page, seconds, swatch } from './html-kit.js';
import { outcomeOf, outcomeText } from './outcome.js';
import type { ScenarioResult } from './scenario-kit.js';

/** The file name of a run's page, relative to the report's directory. */
export const timelineFile = (r: ScenarioResult): string => `${r.scenario}-${r.backend}-${r.mode}.html`;

const at = (r: ScenarioResult, t: number): string => seconds(t - r.history.startedAt);

/** Sentences a newcomer can follow, built from the history (the figures table has the rest). */
export function story(r: ScenarioResult): string[] {
  const h = r.history;
  const c = r.check;
  const lines: string[] = [];
  for (const f of h.faults)
    lines.push(`The fault, <b>${esc(f.label)}</b>, lasted from ${at(r, f.start)} to ${at(r, f.end)} (the grey band).`);
  const clients = new Set(h.intervals.map((i) => i.client)).size;
  lines.push(`${clients} clients took the lock ${c.acquisitions} times in ${seconds(h.endedAt - h.startedAt)}.`);
  const first = c.overlapPairs[0];
  if (first && (h.permits ?? 1) > 1) {
    lines.push(
      `<b>More holders than permits:</b> ${esc(first.b.client)} took a permit at ${at(r, first.b.start)} while ${h.permits} others were inside (${esc(first.a.client)} among them, until ${at(r, first.a.end)}). ${c.overlaps === 1 ? 'That was the only excess hold.' : `${c.overlaps} excess holds in all.`} A semaphore allows ${h.permits} holders at once.`,
    );
  } else if (first) {
    const [older, newer] = first.a.start <= first.b.start ? [first.a, first.b] : [first.b, first.a];
    lines.push(
      `<b>Two holders at once:</b> ${esc(newer.client)} took the lock at ${at(r, newer.start)} while ${esc(older.client)} still believed it held it (from ${at(r, older.start)} until ${at(r, older.end)}), for ${seconds(first.end - first.start)}. ${c.overlaps === 1 ? 'That was the only overlap.' : `${c.overlaps} overlapping pairs in all.`}`,
    );
  } else {
    lines.push('No two clients ever held the lock at the same time.');
  }
  for (const i of h.intervals.filter((x) => x.lostNoticeAt !== undefined).slice(0, 3)) {
    const lead = i.leaseExpiresAt !== undefined ? i.leaseExpiresAt - (i.lostNoticeAt as number) : undefined;
    const when =
      lead === undefined
        ? ''
        : lead >= 0
          ? `, ${Math.round(lead)} ms before its lease ran out by its own count`
          : `, ${Math.round(-lead)} ms after its lease had run out`;
    lines.push(`${esc(i.client)} was told it had lost the lock at ${at(r, i.lostNoticeAt as number)}${when} (the orange diamond).`);
  }
  const stalePlain = h.plainWrites.filter((w) => w.stale && w.accepted);
  const staleFenced = h.fencedWrites.filter((w) => w.stale);
  const fenced = h.intervals.some((i) => i.fence !== undefined);
  if (h.plainWrites.length === 0 && h.fencedWrites.length === 0)
    lines.push('The holders in this run only read: the registers were not written.');
  else if (!fenced)
    lines.push(
      'This backend gives no fencing tokens, so the fenced store had nothing to check (nothing was sent to it): nothing could tell a stale write from a fresh one.',
    );
  else if (stalePlain.length === 0 && staleFenced.length === 0)
    lines.push('No stale write happened: every write came from the newest holder.');
  else {
    const w = staleFenced[0] ?? stalePlain[0]!;
    const plainVerdict =
      stalePlain.length > 0
        ? "the <b>plain register accepted</b> it, overwriting the newer holder's work"
        : 'the plain register had nothing to overwrite';
    const store = h.fencedStore ? `the fenced store (${esc(fencedStoreNames[h.fencedStore.kind].long)})` : 'the fenced store';
    const fencedVerdict = h.fencedWrites.some((x) => x.stale && x.accepted)
      ? `${store} <b>accepted it too</b>`
      : `<b>${store} refused it</b> with StaleFenceError (its fence was lower than one the store had already admitted); the store refused it, not the lock, which had already let that holder go`;
    lines.push(
      `<b>A stale write:</b> ${esc(w.client)} wrote at ${at(r, w.at)} with fence ${w.fence ?? '-'}, after a newer holder had written; ${plainVerdict}, and ${fencedVerdict}.`,
    );
  }
  if (c.fencedStore.endsWithNewest !== undefined && h.fencedWrites.length > 0)
    lines.push(`After the run the fenced store held ${esc(c.fencedStore.finalText)}.`);
  if (c.faultUnavailableMs > 0) lines.push(`The longest stretch with no holder around the fault was ${seconds(c.faultUnavailableMs)}.`);
  return lines;
}

interface Layout {
  readonly width: number;
  readonly left: number;
  readonly right: number;
  readonly x: (t: number) => number;
}

function axis(r: ScenarioResult, l: Layout, top: number, bottom: number): string {
  const span = (r.history.endedAt - r.history.startedAt) / 1000;
  const step = span > 30 ? 5 : span > 12 ? 2 : 1;
  const parts: string[] = [];
  for (let s = 0; s <= span + 1e-9; s += step) {
    const xs = l.x(r.history.startedAt + s * 1000);
    parts.push(`<line x1="${xs}" y1="${top}" x2="${xs}" y2="${bottom}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${xs}" y="${bottom + 14}" font-size="11" text-anchor="middle">${s}</text>`);
  }
  parts.push(
    `<text x="${(l.left + l.width - l.right) / 2}" y="${bottom + 32}" font-size="12" text-anchor="middle">time since the run started (seconds)</text>`,
  );
  return parts.join('');
}

function holdBar(i: Interval, y: number, l: Layout, r: ScenarioResult): string {
  const x0 = l.x(i.start);
  const w = Math.max(1.5, l.x(i.end) - x0);
  const title = `${i.client} held the lock from ${at(r, i.start)} to ${at(r, i.end)}, fence ${i.fence ?? 'none'}, ${i.outcome === 'lost' ? 'ended by a loss notice' : 'ended by its release'}`;
  return `<rect x="${x0}" y="${y}" width="${w}" height="16" fill="${i.outcome === 'lost' ? colours.lost : colours.released}"><title>${esc(title)}</title></rect>`;
}

function writeMark(w: WriteRecord, y: number, l: Layout, r: ScenarioResult, register: string): string {
  const cx = l.x(w.at);
  const title = `${w.client} wrote to the ${register} at ${at(r, w.at)} with fence ${w.fence ?? 'none'}: ${w.accepted ? 'accepted' : 'refused by the store (StaleFenceError)'}${w.stale ? ' (a stale write)' : ''}`;
  const ring = w.stale ? `<circle cx="${cx}" cy="${y}" r="9" fill="none" stroke="${colours.overlap}" stroke-width="2"/>` : '';
  const mark = w.accepted
    ? `<circle cx="${cx}" cy="${y}" r="4" fill="${colours.accepted}"/>`
    : `<path d="M${cx - 5} ${y - 5} L${cx + 5} ${y + 5} M${cx + 5} ${y - 5} L${cx - 5} ${y + 5}" stroke="${colours.rejected}" stroke-width="2.5"/>`;
  // A white halo keeps the label readable over the marks it crosses.
  const text = `stale write ${w.accepted ? 'accepted' : 'refused by the store, not the lock'}`;
  // Beside the mark, on its left when it would run past the chart's edge (about 6 px a character).
  const fits = cx + 12 + text.length * 6 <= l.width;
  const label = w.stale
    ? `<text x="${fits ? cx + 12 : cx - 12}" y="${y - 6}" font-size="11" font-weight="600" text-anchor="${fits ? 'start' : 'end'}" fill="${colours.overlap}" stroke="#fff" stroke-width="4" paint-order="stroke">${text}</text>`
    : '';
  return `<g><title>${esc(title)}</title>${ring}${mark}${label}</g>`;
}

export function timelineSvg(r: ScenarioResult): string {
  const h = r.history;
  const clients = [...new Set(h.intervals.map((i) => i.client))].sort();
  const width = 1080;
  const left = 150;
  const right = 130;
  const lane = 30;
  const top = 40;
  const span = Math.max(1, h.endedAt - h.startedAt);
  const l: Layout = { width, left, right, x: (t) => left + ((t - h.startedAt) / span) * (width - left - right) };
  const registersTop = top + clients.length * lane + 34;
  const bottom = registersTop + 2 * lane;
  const height = bottom + 44;
  const parts: string[] = [];
  parts.push(axis(r, l, top - 6, bottom));
  for (const f of h.faults) {
    const x0 = l.x(f.start);
    const w = Math.max(2, l.x(f.end) - x0);
    parts.push(
      `<rect x="${x0}" y="${top - 6}" width="${w}" height="${bottom - top + 6}" fill="${colours.fault}" opacity="0.3"><title>${esc(f.label)}</title></rect>`,
    );
    // The label sits above the band, starting at the band, kept inside the chart.
    const labelX = Math.min(x0, width - right - 7 * (f.label.length + 7));
    parts.push(`<text x="${Math.max(left, labelX)}" y="${top - 14}" font-size="12" font-weight="600">fault: ${esc(f.label)}</text>`);
  }
  const role = (c: string): string => {
    const mode = h.intervals.find((i) => i.client === c)?.mode;
    return mode ? ` (${mode === 'read' ? 'reader' : 'writer'})` : '';
  };
  clients.forEach((c, n) =>
    parts.push(`<text x="${left - 10}" y="${top + n * lane + 13}" font-size="12" text-anchor="end">client ${esc(c)}${role(c)}</text>`),
  );
  for (const i of h.intervals) parts.push(holdBar(i, top + clients.indexOf(i.client) * lane, l, r));
  // Overlaps are outlined, not painted over: the bars' own colours (a loss notice) stay visible.
  for (const o of r.check.overlapPairs) {
    for (const iv of [o.a, o.b]) {
      const y = top + clients.indexOf(iv.client) * lane;
      parts.push(
        `<rect x="${l.x(o.start)}" y="${y - 3}" width="${Math.max(2, l.x(o.end) - l.x(o.start))}" height="22" fill="none" stroke="${colours.overlap}" stroke-width="2.5" stroke-dasharray="5 2"><title>two holders at once for ${Math.round(o.end - o.start)} ms</title></rect>`,
      );
    }
  }
  for (const i of h.intervals) {
    if (i.lostNoticeAt === undefined) continue;
    const cx = l.x(i.lostNoticeAt);
    const cy = top + clients.indexOf(i.client) * lane + 8;
    parts.push(
      `<path d="M${cx} ${cy - 9} L${cx + 7} ${cy} L${cx} ${cy + 9} L${cx - 7} ${cy} Z" fill="${colours.lost}" stroke="#6b4a00"><title>${esc(`${i.client} told it lost the lock at ${at(r, i.lostNoticeAt)}`)}</title></path>`,
    );
  }
  parts.push(`<line x1="${left}" y1="${registersTop - 20}" x2="${width - right}" y2="${registersTop - 20}" stroke="#bbb"/>`);
  const store = h.fencedStore ? fencedStoreNames[h.fencedStore.kind].short : undefined;
  const registers: [string, string | undefined, WriteRecord[]][] = [
    ['plain register', 'no check', h.plainWrites],
    ['fenced store', store && `checked by ${store}`, h.fencedWrites],
  ];
  registers.forEach(([name, sub, writes], n) => {
    const y = registersTop + n * lane + 8;
    parts.push(`<text x="${left - 10}" y="${y + (sub ? 0 : 4)}" font-size="12" text-anchor="end">${name} writes</text>`);
    if (sub) parts.push(`<text x="${left - 10}" y="${y + 12}" font-size="10" fill="#555" text-anchor="end">${esc(sub)}</text>`);
    // Stale writes last, so their rings and labels sit on top.
    for (const w of [...writes.filter((x) => !x.stale), ...writes.filter((x) => x.stale)]) parts.push(writeMark(w, y, l, r, name));
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="timeline of ${esc(r.scenario)} on ${esc(r.backend)} ${esc(r.mode)}">${parts.join('')}</svg>`;
}

export function legend(): string {
  const items: [string, string][] = [
    [swatch(colours.released), 'a hold that ended with a release'],
    [swatch(colours.lost), 'a hold that ended when the client was told it lost the lock'],
    [swatch(colours.lost, 'diamond'), 'the moment of that loss notice'],
    [
      `<svg class="swatch" width="24" height="16" aria-hidden="true"><rect x="2" y="2" width="20" height="12" fill="none" stroke="${colours.overlap}" stroke-width="2.5" stroke-dasharray="5 2"/></svg>`,
      'two clients holding at once (an overlap)',
    ],
    [swatch(colours.fault, 'band'), 'the fault window'],
    [swatch(colours.accepted, 'dot'), 'a write the register or the store accepted'],
    [swatch(colours.rejected, 'cross'), 'a write the fenced store refused (StaleFenceError from @deadbolt/fence)'],
    [
      `<svg class="swatch" width="24" height="16" aria-hidden="true"><circle cx="12" cy="8" r="6" fill="none" stroke="${colours.overlap}" stroke-width="2"/></svg>`,
      'a stale write (from a holder older than one that already wrote)',
    ],
  ];
  return `<div class="legend">${items.map(([s, t]) => `<span>${s}${esc(t)}</span>`).join('')}</div>`;
}

export function figuresTable(r: ScenarioResult): string {
  const c = r.check;
  const lead = c.lostNoticeLeadMs.length > 0 ? c.lostNoticeLeadMs.map((m) => `${Math.round(m)} ms`).join(', ') : '-';
  const rows: [string, string, string][] = [
    ['acquisitions', String(c.acquisitions), 'times a client took the lock'],
    ['acquisitions per second', c.acquisitionsPerSecond.toFixed(1), 'over the whole run'],
    ['overlaps', String(c.overlaps), 'pairs of holds by different clients that intersect in time'],
    [
      'stale writes accepted, plain register',
      String(c.staleWritesAcceptedPlain),
      'writes from an older holder that the plain register took',
    ],
    [
      'stale writes refused by the fenced store',
      String(c.staleWritesRejectedFenced),
      `writes ${c.fencedStore.store ?? 'the data store'} refused with StaleFenceError because a newer fence had written (the store refused them, not the lock)`,
    ],
    ['stale writes accepted, fenced store', String(c.staleWritesAcceptedFenced), 'should be 0 wherever the backend gives fencing tokens'],
    ['fenced store at the end', c.fencedStore.finalText, "should be the newest holder's last write"],
    ['loss notices', String(c.lostNotices), 'times a holder was told it had lost the lock'],
    ['notice before lease expiry', lead, 'for each notice: how long before the lease ran out (negative: after)'],
    ['longest wait with no holder, around the fault', `${c.faultUnavailableMs} ms`, 'what the fault cost in availability'],
    ['longest wait with no holder, whole run', `${c.maxUnavailableMs} ms`, 'start-up included'],
  ];
  return `<table><thead><tr><th>figure</th><th>value</th><th>what it counts</th></tr></thead><tbody>${rows.map(([k, v, d]) => `<tr><td>${esc(k)}</td><td class="num">${esc(v)}</td><td>${esc(d)}</td></tr>`).join('')}</tbody></table>`;
}

export function timelineHtml(r: ScenarioResult, scenarioDescription = ''): string {
  const outcome = outcomeOf(r);
  const body = `<p><a href="index.html">&larr; all runs</a></p>
<h1>${esc(r.scenario)}: ${esc(r.backend)} / ${esc(r.mode)} <span class="badge">${r.class}</span></h1>
${scenarioDescription ? `<p>${esc(scenarioDescription)}</p>` : ''}
<p>Predicted for this backend: ${esc(r.expectation)}.<br>Result: <b>${esc((r.history.permits ?? 1) > 1 && outcome === 'overlapped' ? 'overlapped: more holders than permits at the same time' : outcomeText[outcome])}</b>; ${r.matched ? '<span class="verdict-yes">&#10003; as predicted</span>' : '<span class="verdict-no">&#10007; not as predicted</span>'}.</p>
<h2>What happened</h2>
<ul class="story">${story(r)
    .map((s) => `<li>${s}</li>`)
    .join('')}</ul>
<h2>Timeline</h2>
${fencedNoteForTimeline(r)}
${legend()}
${timelineSvg(r)}
<p class="meta">Each lane is one client; time runs left to right. Hover a bar or a mark for its details.</p>
<h2>Linearizability</h2>
${linearizabilitySection(r)}
<h2>Figures</h2>
${figuresTable(r)}`;
  return page(`${r.scenario} on ${r.backend}/${r.mode}`, body);
}
