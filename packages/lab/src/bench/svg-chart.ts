/** A small line chart as inline SVG: log or linear axes, labelled ticks, a legend. No dependency. */

export const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export interface Series {
  readonly name: string;
  readonly colour: string;
  /** Drawn dashed: a limit (the hand-off), not a lock. */
  readonly limit?: boolean;
  readonly points: readonly { readonly x: number; readonly y: number }[];
}

export interface Chart {
  readonly id: string;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xLog: boolean;
  readonly yLog?: boolean;
  readonly series: readonly Series[];
}

/** Okabe-Ito colours, told apart by colour-blind readers; the legend names every line too. */
export const palette = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000', '#f0e442'];

const width = 640;
const height = 360;
const margin = { left: 72, right: 16, top: 36, bottom: 52 };

interface Scale {
  at(value: number): number;
  ticks: number[];
}

function logScale(min: number, max: number, from: number, to: number): Scale {
  const low = Math.floor(Math.log10(min));
  const high = Math.max(low + 1, Math.ceil(Math.log10(max)));
  const ticks: number[] = [];
  for (let exponent = low; exponent <= high; exponent += 1) {
    for (const step of [1, 2, 5]) {
      const value = step * 10 ** exponent;
      if (value >= 10 ** low && value <= 10 ** high) ticks.push(value);
    }
  }
  // The axis ends at the first 1-2-5 tick at or above the largest value, not at the next decade.
  const end = ticks.find((tick) => tick >= max && tick > 10 ** low) ?? 10 ** high;
  const kept = ticks.filter((tick) => tick <= end);
  const span = Math.log10(end) - low;
  return { at: (value) => from + ((Math.log10(value) - low) / span) * (to - from), ticks: kept };
}

function linearScale(max: number, from: number, to: number): Scale {
  const top = max > 0 ? max * 1.08 : 1;
  const rough = top / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((s) => s * magnitude).find((s) => s >= rough) ?? rough;
  const end = Math.ceil(top / step) * step;
  const ticks: number[] = [];
  for (let value = 0; value <= end + step / 2; value += step) ticks.push(value);
  return { at: (value) => from + (value / end) * (to - from), ticks };
}

export function formatNumber(value: number): string {
  if (value >= 1_000_000) return `${round(value / 1_000_000)}M`;
  if (value >= 1_000) return `${round(value / 1_000)}k`;
  return String(round(value));
}

const round = (value: number): number => Math.round(value * 100) / 100;

/** The chart as an SVG element (role img, its title and axis labels as text), or a note when there are no points. */
export function lineChart(chart: Chart): string {
  const drawn = chart.series.map((s) => ({ ...s, points: s.points.filter((p) => Number.isFinite(p.y) && (!chart.yLog || p.y > 0)) }));
  const all = drawn.flatMap((s) => s.points);
  if (all.length === 0)
    return `<p class="empty" data-chart="${escapeHtml(chart.id)}">${escapeHtml(chart.title)}: no points in this run.</p>`;
  const xs = all.map((p) => p.x);
  const ys = all.map((p) => p.y);
  const plot = { left: margin.left, right: width - margin.right, top: margin.top, bottom: height - margin.bottom };
  const x = chart.xLog
    ? logScale(Math.min(...xs), Math.max(...xs), plot.left, plot.right)
    : linearScale(Math.max(...xs), plot.left, plot.right);
  const y = chart.yLog
    ? logScale(Math.min(...ys), Math.max(...ys), plot.bottom, plot.top)
    : linearScale(Math.max(...ys), plot.bottom, plot.top);
  const parts: string[] = [];
  for (const tick of x.ticks) {
    const at = x.at(tick).toFixed(1);
    parts.push(`<line x1="${at}" x2="${at}" y1="${plot.top}" y2="${plot.bottom}" class="grid"/>`);
    parts.push(`<text x="${at}" y="${plot.bottom + 16}" text-anchor="middle" class="tick">${formatNumber(tick)}</text>`);
  }
  for (const tick of y.ticks) {
    const at = y.at(tick).toFixed(1);
    parts.push(`<line x1="${plot.left}" x2="${plot.right}" y1="${at}" y2="${at}" class="grid"/>`);
    parts.push(`<text x="${plot.left - 6}" y="${at}" dy="4" text-anchor="end" class="tick">${formatNumber(tick)}</text>`);
  }
  parts.push(`<rect x="${plot.left}" y="${plot.top}" width="${plot.right - plot.left}" height="${plot.bottom - plot.top}" class="frame"/>`);
  for (const s of drawn) {
    if (s.points.length === 0) continue;
    const sorted = [...s.points].sort((a, b) => a.x - b.x);
    const path = sorted.map((p, i) => `${i === 0 ? 'M' : 'L'}${x.at(p.x).toFixed(1)} ${y.at(p.y).toFixed(1)}`).join(' ');
    const dash = s.limit ? ' stroke-dasharray="6 4"' : '';
    parts.push(`<path d="${path}" fill="none" stroke="${s.colour}" stroke-width="2"${dash} data-series="${escapeHtml(s.name)}"/>`);
    for (const p of sorted) {
      parts.push(
        `<circle cx="${x.at(p.x).toFixed(1)}" cy="${y.at(p.y).toFixed(1)}" r="3" fill="${s.colour}"><title>${escapeHtml(`${s.name}: ${formatNumber(p.x)} -> ${formatNumber(p.y)}`)}</title></circle>`,
      );
    }
  }
  parts.push(`<text x="${(plot.left + plot.right) / 2}" y="20" text-anchor="middle" class="chart-title">${escapeHtml(chart.title)}</text>`);
  parts.push(
    `<text x="${(plot.left + plot.right) / 2}" y="${height - 12}" text-anchor="middle" class="axis-label" data-axis="x">${escapeHtml(chart.xLabel)}${chart.xLog ? ' (log scale)' : ''}</text>`,
  );
  const yMid = (plot.top + plot.bottom) / 2;
  parts.push(
    `<text x="16" y="${yMid}" transform="rotate(-90 16 ${yMid})" text-anchor="middle" class="axis-label" data-axis="y">${escapeHtml(chart.yLabel)}${chart.yLog ? ' (log scale)' : ''}</text>`,
  );
  const legend = drawn
    .map(
      (s) =>
        `<li><svg width="28" height="10" aria-hidden="true"><line x1="0" x2="28" y1="5" y2="5" stroke="${s.colour}" stroke-width="2"${s.limit ? ' stroke-dasharray="6 4"' : ''}/></svg> ${escapeHtml(s.name)}${s.limit ? ' (the limit)' : ''}</li>`,
    )
    .join('');
  return `<figure data-chart="${escapeHtml(chart.id)}"><svg role="img" aria-label="${escapeHtml(chart.title)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${parts.join('')}</svg><figcaption><ul class="legend">${legend}</ul></figcaption></figure>`;
}
