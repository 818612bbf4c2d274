/** What the report's pages share: escaping, colours, the style sheet, formatting. */
import type { Outcome } from './outcome.js';

export const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Colour-blind-safe pairs (Okabe-Ito based), also told apart by the text in every cell. */
export const colours = {
  released: '#0072b2',
  lost: '#e69f00',
  overlap: '#d55e00',
  fault: '#999999',
  accepted: '#009e73',
  rejected: '#cc0000',
  outcome: { exclusive: '#cdebd9', overlapped: '#f7c6b5', unavailable: '#fbe7a8' } satisfies Record<Outcome, string>,
} as const;

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

/** A small inline swatch for legends. */
export function swatch(fill: string, shape: 'bar' | 'band' | 'dot' | 'cross' | 'diamond' = 'bar'): string {
  const body = {
    bar: `<rect x="1" y="3" width="22" height="10" fill="${fill}"/>`,
    band: `<rect x="1" y="0" width="22" height="16" fill="${fill}" opacity="0.35"/>`,
    dot: `<circle cx="12" cy="8" r="5" fill="${fill}"/>`,
    cross: `<path d="M7 3 L17 13 M17 3 L7 13" stroke="${fill}" stroke-width="3"/>`,
    diamond: `<path d="M12 2 L18 8 L12 14 L6 8 Z" fill="${fill}"/>`,
  }[shape];
  return `<svg class="swatch" width="24" height="16" viewBox="0 0 24 16" aria-hidden="true">${body}</svg>`;
}

export const styleSheet = `
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1280px; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .3rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .92rem; }
th, td { border: 1px solid #ccc; padding: .35rem .55rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; } .matrix { font-size: .85rem; } .matrix td { min-width: 6.5rem; } .matrix th { font-size: .85rem; } .matrix td a { color: inherit; text-decoration: none; display: block; }
.matrix td a:hover { text-decoration: underline; } .cell-word { font-weight: 600; } .cell-note { font-size: .78rem; }
.notrun { color: #888; text-align: center; background: repeating-linear-gradient(45deg, #fafafa, #fafafa 6px, #f0f0f0 6px, #f0f0f0 12px); }
.badge { display: inline-block; padding: 0 .4rem; border-radius: .6rem; font-size: .8rem; background: #eee; margin-left: .3rem; }
.legend { display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; margin: .6rem 0; font-size: .9rem; }
.legend span { display: inline-flex; align-items: center; gap: .3rem; } .swatch { flex: none; }
.verdict-yes { color: #05603a; font-weight: 600; } .verdict-no { color: #a00; font-weight: 600; }
tr.blocked td { background: #fde2d8; } caption { text-align: left; font-size: .9rem; color: #555; }
.story li { margin: .25rem 0; } .meta { color: #555; font-size: .9rem; } dt { font-weight: 600; margin-top: .5rem; } dd { margin-left: 1.2rem; }
svg text { font-family: system-ui, sans-serif; }
td.predicted { min-width: 18rem; }
.fenced-note { border-left: 4px solid #0072b2; background: #eef5fb; padding: .5rem .8rem; }
`;

export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><style>${styleSheet}</style></head>
<body>
${body}
</body></html>
`;
}
